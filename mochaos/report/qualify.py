"""Qualification: run the suites N times and turn the runs into a pass/fail/flaky table.

Each run is a plain pytest session with its own reports folder; its
``summary.json`` is the only input. Infrastructure errors and inconclusive
runs are counted apart and never counted as operator failures.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mochaos import exits
from mochaos.errors import UsageError
from mochaos.report import child_pytest
from mochaos.report.child_pytest import PytestRunner, reports_options
from mochaos.report.junit import merge_junit
from mochaos.report.rundir import new_run_id
from mochaos.report.summary import OUTCOMES

MISSING = "missing"


@dataclass
class RunRecord:
    """One pytest session of the qualification."""

    index: int
    exit_code: int
    reports_dir: str
    counts: dict[str, int] = field(default_factory=dict)
    problem: str = ""


@dataclass
class ScenarioRecord:
    """One scenario across all runs."""

    nodeid: str
    outcomes: list[str]
    failed_invariants: list[str] = field(default_factory=list)
    finalize_retries: list[int] = field(default_factory=list)
    """The largest finalize retry count of any claim, per run with a result."""
    durations: list[float] = field(default_factory=list)
    """Seconds from the scenario's start to its verdict, per run with a result."""

    def count(self, outcome: str) -> int:
        """How many runs ended with ``outcome``."""
        return self.outcomes.count(outcome)

    @property
    def status(self) -> str:
        """``pass``, ``fail``, ``flaky``, or ``no verdict`` (only errors/inconclusive)."""
        passed, failed = self.count("passed"), self.count("failed")
        if passed and failed:
            return "flaky"
        if failed:
            return "fail"
        return "pass" if passed else "no verdict"

    def rate(self, outcome: str) -> float | None:
        """Share of runs with a verdict (passed or failed) that ended with ``outcome``."""
        decided = self.count("passed") + self.count("failed")
        return self.count(outcome) / decided if decided else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form with counts, rates and status."""
        data = asdict(self)
        data |= {o: self.count(o) for o in (*OUTCOMES, MISSING)}
        data |= {
            "status": self.status,
            "pass_rate": self.rate("passed"),
            "fail_rate": self.rate("failed"),
        }
        return data


def _pytest_args(
    *,
    suites: Path,
    operator: str,
    cluster: str,
    keyword: str | None,
    reports_dir: Path,
    extra_args: Sequence[str],
) -> list[str]:
    args = [str(suites), f"--operator={operator}", f"--mochaos-cluster={cluster}"]
    if keyword:
        args += ["-k", keyword]
    args += reports_options(reports_dir)
    return [*args, "-p", "no:cacheprovider", *extra_args]


def _run_problem(exit_code: int, summary: dict[str, Any] | None, why_missing: str) -> str:
    """Why a run as a whole cannot be trusted ("" when it can)."""
    if summary is None and exit_code in exits.PYTEST_BROKE:
        return f"pytest exit {exit_code} ({exits.PYTEST_BROKE[exit_code]})"
    if summary is None:
        return f"{why_missing} (pytest exit {exit_code})"
    if not summary.get("tests"):
        return "summary lists no tests"
    return exits.unexplained(exit_code, summary)


def _pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def _markdown(report: dict[str, Any]) -> str:
    runs, scenarios = report["runs"], report["scenarios"]
    lines = [
        f"# Qualification of {report['operator']} on {report['cluster']}",
        "",
        f"- **operator**: {report['operator']} (version {report.get('operator_version') or '?'})",
        f"- **cluster**: {report.get('cluster_provider') or report['cluster']}, "
        f"Kubernetes {report.get('k8s_version') or '?'}",
        f"- **runs**: {report['repeat']}"
        + (f" (-k {report['keyword']})" if report.get("keyword") else ""),
        f"- **result**: exit {report['exit_code']}: {report['conclusion']}",
        *(
            [f"- **after the runs**: {report['after_runs']['line']}"]
            if report.get("after_runs")
            else []
        ),
        "",
        "Errors (infrastructure), inconclusive outcomes and missing results are counted apart",
        "and left out of the rates: they are never operator failures.",
        "",
        "## Scenarios",
        "",
        "| scenario | "
        + " | ".join(f"run {r['index']}" for r in runs)
        + " | verdict | pass rate | fail rate | failed invariants |",
        "|---|" + "---|" * len(runs) + "---|---:|---:|---|",
    ]
    for s in scenarios:
        cells = " | ".join(s["outcomes"])
        lines.append(
            f"| {s['nodeid']} | {cells} | {s['status']} | {_pct(s['pass_rate'])} "
            f"| {_pct(s['fail_rate'])} | {', '.join(s['failed_invariants']) or '–'} |"
        )
    lines += [
        "",
        "## Runs",
        "",
        "| run | pytest exit | " + " | ".join(OUTCOMES) + " | problem |",
        "|---|---:|" + "---:|" * len(OUTCOMES) + "---|",
    ]
    for r in runs:
        counts = " | ".join(str(r["counts"].get(o, 0)) for o in OUTCOMES)
        lines.append(f"| {r['index']} | {r['exit_code']} | {counts} | {r['problem'] or '–'} |")
    return "\n".join(lines) + "\n"


def _conclusion(
    runs: list[RunRecord], scenarios: list[ScenarioRecord], no_tests: bool, left: bool
) -> tuple[int, str]:
    if no_tests:
        return exits.USAGE, "no test matched (pytest exit 5); check -k with --collect-only"
    if any(r.exit_code == exits.PYTEST_USAGE for r in runs):
        return exits.USAGE, "pytest refused the arguments (exit 4); see the run's output"
    if any(s.count("failed") for s in scenarios):
        return exits.OPERATOR_FAILED, "the operator failed at least one scenario"
    broken = any(r.problem for r in runs) or any(
        s.count(o) for s in scenarios for o in ("error", MISSING)
    )
    if broken or not scenarios:
        return exits.INFRA, "no operator failure, but some runs or scenarios broke"
    if left:
        return exits.INFRA, "no operator failure, but the runs left things behind"
    if any(s.count("inconclusive") for s in scenarios):
        return exits.INCONCLUSIVE, "no operator failure, but some runs judged nothing"
    return exits.OK, "every scenario passed every run"


def qualify(
    *,
    operator: str,
    cluster: str,
    repeat: int = 3,
    keyword: str | None = None,
    suites: Path,
    out_root: Path,
    extra_args: Sequence[str] = (),
    run_pytest: PytestRunner | None = None,
    after_runs: Callable[[], dict[str, Any]] | None = None,
) -> int:
    """Run the suites ``repeat`` times and write the qualification report; return the exit code.

    Writes ``<out_root>/qual-<run-id>/`` with ``runs/<i>/`` (one pytest reports
    folder each), ``qualification.md``, ``qualification.json`` and ``junit.xml``
    (all runs merged). Exit codes (:mod:`mochaos.exits`): 0 every scenario passed every
    run; 1 the operator failed a scenario in some run; 3 broken or errored runs (and no
    operator failure); 6 inconclusive runs only; 2 no test matched ``-k`` or pytest
    refused the arguments. ``run_pytest`` replaces the ``python -m pytest`` subprocess
    (a test hook; mochaos.report.child_pytest runs each). ``after_runs`` sweeps the cluster
    once the runs ended (:func:`mochaos.operator.leftovers.sweep`, as a dict): its line is
    printed and reported, and leftovers make an otherwise passing qualification exit 3.
    """
    if repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {repeat}", hint="e.g. --repeat 3")
    if not suites.exists():
        raise UsageError(f"suites path {suites} does not exist", hint="pass e.g. suites/")
    qdir = out_root / f"qual-{new_run_id()}"
    qdir.mkdir(parents=True)
    runs: list[RunRecord] = []
    summaries: list[dict[str, Any] | None] = []
    no_tests = False
    for i in range(1, repeat + 1):
        reports_dir = qdir / "runs" / str(i)
        reports_dir.mkdir(parents=True)
        print(f"qualify: run {i}/{repeat} -> {reports_dir}", flush=True)
        args = _pytest_args(
            suites=suites,
            operator=operator,
            cluster=cluster,
            keyword=keyword,
            reports_dir=reports_dir,
            extra_args=extra_args,
        )
        run = child_pytest.run_pytest(args, reports_dir=reports_dir, runner=run_pytest)
        exit_code, summary, why_missing = run.exit_code, run.summary, run.why_no_summary
        record = RunRecord(index=i, exit_code=exit_code, reports_dir=str(reports_dir))
        if summary is not None:
            record.counts = {o: int(n) for o, n in (summary.get("counts") or {}).items()}
        if exit_code == exits.NO_TESTS:
            record.problem = "no test matched (pytest exit 5)"
            no_tests = True
        else:
            record.problem = _run_problem(exit_code, summary, why_missing)
        runs.append(record)
        summaries.append(summary)
        counts = ", ".join(f"{n} {o}" for o, n in record.counts.items() if n)
        note = f"; {record.problem}" if record.problem else ""
        print(
            f"qualify: run {i}/{repeat} exit {exit_code}: {counts or 'no results'}{note}",
            flush=True,
        )
        if no_tests:
            break

    scenarios: dict[str, ScenarioRecord] = {}
    for index, summary in enumerate(summaries):
        for test in (summary or {}).get("tests", []):
            nodeid = str(test.get("nodeid"))
            record = scenarios.setdefault(
                nodeid, ScenarioRecord(nodeid=nodeid, outcomes=[MISSING] * len(runs))
            )
            record.outcomes[index] = str(test.get("outcome", "error"))
            record.finalize_retries.append(int(test.get("max_finalize_retries") or 0))
            if test.get("duration"):
                record.durations.append(round(float(test["duration"]), 1))
            for verdict in test.get("verdicts", []):
                invariant = verdict.get("invariant")
                if verdict.get("status") == "fail" and invariant not in record.failed_invariants:
                    record.failed_invariants.append(invariant)
    ordered = [scenarios[k] for k in sorted(scenarios)]
    swept = after_runs() if after_runs is not None else None
    if swept is not None:
        print(f"qualify: {swept['line']}", flush=True)
    exit_code, conclusion = _conclusion(runs, ordered, no_tests, bool(swept and swept["left"]))

    meta = next((s for s in summaries if s), {})
    report = {
        "qualification_id": qdir.name,
        "operator": operator,
        "cluster": cluster,
        "keyword": keyword,
        "repeat": repeat,
        **{k: meta.get(k) for k in ("operator_version", "cluster_provider", "k8s_version")},
        "exit_code": exit_code,
        "conclusion": conclusion,
        "runs": [asdict(r) for r in runs],
        "scenarios": [s.to_dict() for s in ordered],
        "after_runs": swept,
    }
    (qdir / "qualification.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (qdir / "qualification.md").write_text(_markdown(report), encoding="utf-8")
    merge_junit(
        [(f"run-{r.index}", Path(r.reports_dir) / "junit.xml") for r in runs],
        qdir / "junit.xml",
        name=f"mo-chaos qualification of {operator}",
    )
    print(
        f"qualify: exit {exit_code}: {conclusion}; report {qdir / 'qualification.md'}", flush=True
    )
    return exit_code
