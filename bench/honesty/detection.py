"""Benchmark (issue 7): how reliably, how fast and how cheaply the seed scenario judges.

Runs the seed scenario ``--repeat`` times on the upstream target and as often on the
fixed one, one child pytest session per run (its ``summary.json`` is the only input),
and prints detection rate, false-alarm rate, time to verdict, detection latency and the
API load. Run: ``python bench/run.py detection --help``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import figures

from mochaos.errors import InfraError, UsageError
from mochaos.report.child_pytest import run_pytest
from mochaos.report.rundir import LATEST, new_run_id
from mochaos.report.summary import SUMMARY_FILE

KEYWORD = "test_scalein_during_migration and not race and not sweep"
SEED_INVARIANTS = ("finalizer-completes", "no-label-residue", "scalein-skips-migrating")
"""A failed run of upstream detects the race when one of these failed."""
PYTEST_NO_TESTS = 5


@dataclass
class Run:
    """One child pytest session: its outcome and what its result says."""

    role: str
    target: str
    index: int
    reports_dir: str
    exit_code: int = 0
    outcome: str = "missing"
    failed_invariants: list[str] = field(default_factory=list)
    duration: float | None = None
    detection_latency: dict[str, float] = field(default_factory=dict)
    audit_counts: dict[str, float] = field(default_factory=dict)
    seed: int | None = None
    problem: str = ""

    @property
    def decided(self) -> bool:
        """True when the run gave a verdict (passed or failed), not an error or inconclusive."""
        return self.outcome in ("passed", "failed")

    @property
    def detected(self) -> bool:
        """True when the run failed on at least one of the seed race's invariants."""
        return self.outcome == "failed" and bool(set(self.failed_invariants) & set(SEED_INVARIANTS))

    def operator_wps(self) -> float | None:
        """Operator writes per second over the audit slice (its length is requests / rps)."""
        a = self.audit_counts
        seconds = figures.ratio(a.get("framework.requests"), a.get("framework.rps"))
        return figures.ratio(a.get("operator.writes"), seconds)


def pytest_args(*, target: str, time_scale: float, cluster: str, reports_dir: Path) -> list[str]:
    """The child session's pytest arguments: the seed scenario on one target."""
    return [
        "suites/",
        "-k",
        KEYWORD,
        f"--operator={target}",
        f"--time-scale={time_scale:g}",
        f"--mochaos-cluster={cluster}",
        "--mochaos-reports-dir",
        str(reports_dir),
        "-p",
        "no:cacheprovider",
        "-q",
    ]


def read_run(run: Run) -> Run:
    """Fill ``run`` from its ``summary.json`` (or say why it cannot be trusted)."""
    path = Path(run.reports_dir) / LATEST / SUMMARY_FILE
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        run.problem = (
            f"no readable {SUMMARY_FILE} ({type(exc).__name__}; pytest exit {run.exit_code})"
        )
        return run
    tests = summary.get("tests", [])
    if len(tests) != 1:
        run.problem = f"{len(tests)} tests in {SUMMARY_FILE}, expected the seed scenario only"
        return run
    test = tests[0]
    run.outcome = str(test.get("outcome", "error"))
    run.failed_invariants = [
        v["invariant"] for v in test.get("verdicts", []) if v.get("status") == "fail"
    ]
    run.duration = test.get("duration")
    run.detection_latency = dict(test.get("detection_latency") or {})
    run.audit_counts = dict(test.get("audit_counts") or {})
    run.seed = test.get("seed")
    return run


def run_once(run: Run, *, time_scale: float, cluster: str, repo: Path) -> Run:
    """Run one child pytest session into ``run.reports_dir``; its output goes to pytest.log."""
    reports_dir = Path(run.reports_dir)
    reports_dir.mkdir(parents=True, exist_ok=True)
    args = pytest_args(
        target=run.target, time_scale=time_scale, cluster=cluster, reports_dir=reports_dir
    )
    child = run_pytest(args, reports_dir=reports_dir, cwd=repo, log=reports_dir / "pytest.log")
    run.exit_code = child.exit_code
    if child.exit_code == PYTEST_NO_TESTS:
        run.problem = "no test matched (pytest exit 5)"
        return run
    return read_run(run)


def _rate(hits: int, of: int) -> dict[str, Any]:
    return {"hits": hits, "of": of, "rate": hits / of if of else None}


def _spread(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "median": figures.median(values), "max": max(values, default=None)}


def _role_figures(runs: list[Run]) -> dict[str, Any]:
    decided = [r for r in runs if r.decided]
    counts = {o: sum(r.outcome == o for r in runs) for o in ("passed", "failed")}
    counts |= {o: sum(r.outcome == o for r in runs) for o in ("inconclusive", "error", "missing")}
    rps = [r.audit_counts["framework.rps"] for r in runs if "framework.rps" in r.audit_counts]
    requests = [
        r.audit_counts["framework.requests"] for r in runs if "framework.requests" in r.audit_counts
    ]
    wps = [w for r in runs if (w := r.operator_wps()) is not None]
    return {
        "runs": len(runs),
        "outcomes": counts,
        "time_to_verdict_s": _spread([r.duration for r in decided if r.duration is not None]),
        "framework_requests": _spread(requests),
        "framework_rps": _spread(rps),
        "operator_writes_per_s": _spread(wps),
    }


def summarise(upstream: list[Run], fixed: list[Run]) -> dict[str, Any]:
    """Detection and false-alarm rates over runs with a verdict, plus per-role figures."""
    up_decided = [r for r in upstream if r.decided]
    fx_decided = [r for r in fixed if r.decided]
    latency = {
        inv: _spread([r.detection_latency[inv] for r in upstream if inv in r.detection_latency])
        for inv in SEED_INVARIANTS
    }
    return {
        "detection": _rate(sum(r.detected for r in up_decided), len(up_decided)),
        "false_alarm": _rate(sum(bool(r.failed_invariants) for r in fx_decided), len(fx_decided)),
        "detection_latency_s": latency,
        "upstream": _role_figures(upstream),
        "fixed": _role_figures(fixed),
    }


def _pct(rate: dict[str, Any]) -> str:
    share = "–" if rate["rate"] is None else f"{rate['rate']:.0%}"
    return f"{rate['hits']}/{rate['of']} ({share})"


def _report(result: dict[str, Any]) -> str:
    s = result["summary"]
    f = figures.fmt
    rows = []
    for role, rate in (("upstream", "detection"), ("fixed", "false_alarm")):
        r = s[role]
        o = r["outcomes"]
        rows.append(
            [
                f"{role} ({result['targets'][role]})",
                f"{o['passed']}/{o['failed']}/{o['inconclusive'] + o['error'] + o['missing']}",
                f"{rate.replace('_', ' ')} {_pct(s[rate])}",
                f"{f(r['time_to_verdict_s']['median'], ' s', 1)} "
                f"(max {f(r['time_to_verdict_s']['max'], ' s', 1)})",
                f"{f(r['framework_rps']['median'])} (max {f(r['framework_rps']['max'])})",
                f(r["operator_writes_per_s"]["median"]),
            ]
        )
    headers = [
        "target",
        "pass/fail/other",
        "rate",
        "time to verdict (median)",
        "framework req/s (median)",
        "operator writes/s",
    ]
    lines = [
        f"detection: seed scenario, {result['repeat']} runs per target, time scale "
        f"{result['time_scale']:g}, {result['parallel']} at a time",
        figures.table(headers, rows),
        "detection latency on upstream (monitor's first detection minus the violation):",
    ]
    for inv, spread in s["detection_latency_s"].items():
        lines.append(
            f"  {inv}: median {f(spread['median'], ' s')}, max {f(spread['max'], ' s')} "
            f"(n={spread['n']})"
        )
    problems = [r for r in result["runs"] if r["problem"]]
    lines += [f"  problem: {r['role']} run {r['index']}: {r['problem']}" for r in problems]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = figures.Parser(prog="python bench/run.py detection", description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=10, help="runs per target (default 10)")
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="operator intervals scale: 1.0 faithful (default), 0.2 for a quick run",
    )
    p.add_argument("-n", dest="parallel", type=int, default=1, help="runs at a time (default 1)")
    p.add_argument("--upstream", default="model:upstream", help="the target with the race")
    p.add_argument("--fixed", default="model:fixed", help="the target without it")
    p.add_argument("--cluster", default="local", help="cluster provider (default local)")
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT, help="figures folder")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the table, write the figures; return the exit status."""
    args = _parser().parse_args(argv)
    if args.repeat < 1 or args.parallel < 1:
        raise UsageError("--repeat and -n must be at least 1", hint="e.g. --repeat 10 -n 1")
    if args.time_scale <= 0:
        raise UsageError(f"--time-scale must be > 0, got {args.time_scale}", hint="e.g. 0.2")
    run_id = new_run_id()
    root = args.out / f"detection-{run_id}"
    targets = {"upstream": args.upstream, "fixed": args.fixed}
    # Interleaved, so both targets see the same machine load over the benchmark.
    runs = [
        Run(role=role, target=target, index=i, reports_dir=str(root / role / str(i)))
        for i in range(1, args.repeat + 1)
        for role, target in targets.items()
    ]
    machine = figures.machine()

    def one(run: Run) -> Run:
        done = run_once(run, time_scale=args.time_scale, cluster=args.cluster, repo=figures.REPO)
        failed = ",".join(done.failed_invariants) or "-"
        print(
            f"bench: {done.role} run {done.index}/{args.repeat}: {done.outcome} {failed} "
            f"{figures.fmt(done.duration, ' s', 1)}{'; ' + done.problem if done.problem else ''}",
            file=sys.stderr,
            flush=True,
        )
        return done

    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        done = list(pool.map(one, runs))
    if any(r.exit_code == PYTEST_NO_TESTS for r in done):
        raise UsageError(f"no test matched -k {KEYWORD!r}", hint="run from the mo-chaos checkout")
    if not any(r.decided for r in done):
        raise InfraError("no run gave a verdict", hint=f"see the pytest.log files under {root}")
    result = {
        "benchmark": "detection",
        "scenario": f"pytest suites/ -k {KEYWORD!r}",
        "targets": targets,
        "repeat": args.repeat,
        "time_scale": args.time_scale,
        "parallel": args.parallel,
        "cluster": args.cluster,
        "machine": machine,
        "reports": str(root),
        "summary": summarise(
            [r for r in done if r.role == "upstream"], [r for r in done if r.role == "fixed"]
        ),
        "runs": [asdict(r) for r in done],
    }
    print(_report(result))
    print(f"figures: {figures.write_figures('detection', result, out=args.out, run_id=run_id)}")
    return 0


if __name__ == "__main__":
    figures.run(main)
