"""Benchmark: verdict honesty under load — no false verdict while the machine is saturated
and the apiserver keeps freezing.

Runs the suites on ``model:fixed`` (the green reference: every scenario must pass or be
inconclusive) with ``-n 4`` on a private local cluster, session after session until at
least ``--scenarios`` scenarios ran, while a CPU burner per core keeps every core busy and
the apiserver is frozen (SIGSTOP) for ``--pause`` seconds at random moments (a pause
every ``--gap`` seconds on average, so every scenario lives through at least one). A
false verdict is a *failed* scenario (the fixed model breaks nothing) or a *passed* one
whose gated fault landed outside its window. Prints the counts and the reason of every
failure or error; figures in ``reports/bench/load-honesty-<run-id>.json``, the sessions'
logs and reports under ``--work``. Exit 0 when there was no false verdict.
Run: ``python bench/run.py load_honesty --help``. Every process it starts is stopped by pid.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import figures

from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.observe.history import History
from mochaos.report.child_pytest import pytest_command, reports_options, run_pytest

ROOT = Path(__file__).resolve().parents[2]
BURN = "while True: pass"


@dataclass
class Pauses:
    """Freezes the apiserver for ``seconds`` at random moments until stopped."""

    provider: LocalProvider
    seconds: float
    gap: float
    rng: random.Random
    done: list[tuple[float, float]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        """Pause, resume, wait a random gap (mean ``gap``), again, until ``stop``."""
        while not self.stop.wait(self.rng.uniform(0.2 * self.gap, 1.8 * self.gap)):
            pid = self.provider.running_pids().get("kube-apiserver")
            if pid is None:
                continue
            t0 = time.time()
            os.kill(pid, signal.SIGSTOP)
            try:
                self.stop.wait(self.seconds)
            finally:
                os.kill(pid, signal.SIGCONT)
            self.done.append((t0, time.time()))
            print(f"bench: apiserver frozen {self.done[-1][1] - t0:.1f}s", flush=True)


def burners(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` processes spinning on a core each."""
    return [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(n)]


def stop_all(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    """Kill our processes by pid."""
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def run_session(index: int, *, out: Path, env: dict[str, str], workers: int, time_scale: float,
                seed: int, keyword: str | None) -> Path:  # fmt: skip
    """One pytest session of the suites; its run folder."""
    reports = out / f"reports-{index}"
    args = [
        "suites", "-p", "no:cacheprovider", "-q",
        "-n", str(workers), "--operator", "model:fixed", "--time-scale", str(time_scale),
        "--chaos-seed", str(seed), *reports_options(reports, out / f"junit-{index}.xml"),
        *(["-k", keyword] if keyword else []),
    ]  # fmt: skip
    print(f"bench: session {index}: $ {' '.join(pytest_command(args)[2:])}", flush=True)
    child = run_pytest(args, reports_dir=reports, cwd=ROOT, env=env,
                       log=out / f"pytest-{index}.log")  # fmt: skip
    print(f"bench: session {index}: exit {child.exit_code} in {child.seconds:.0f}s")
    return (reports / "latest").resolve()


@dataclass
class Scenario:
    """One scenario's outcome and what it lived through."""

    nodeid: str
    session: int
    outcome: str
    message: str
    pauses: int
    missed_windows: int
    cluster_findings: int


def judge(run_dir: Path, session: int, pauses: list[tuple[float, float]]) -> list[Scenario]:
    """Each scenario of a session, with the pauses that overlapped its history."""
    summary = json.loads((run_dir / "summary.json").read_text())
    out = []
    for test in summary["tests"]:
        history_file = test.get("artifacts", {}).get("history")
        overlapped, missed = 0, 0
        if history_file and Path(history_file).is_file():
            history = History.from_jsonl(Path(history_file))
            overlapped = sum(1 for a, b in pauses if a < history.end and b > history.start)
            missed = sum(1 for a in history.actions() if a.in_window is False)
        out.append(Scenario(
            nodeid=test["nodeid"], session=session, outcome=test["outcome"],
            message=" ".join(str(test.get("message", "")).split())[:300], pauses=overlapped,
            missed_windows=missed,
            cluster_findings=sum(f.startswith("cluster: ") for f in test.get("findings", [])),
        ))  # fmt: skip
    return out


def false_verdicts(scenarios: Sequence[Scenario]) -> list[Scenario]:
    """Failed on the fixed model, or passed although a fault missed its window."""
    return [
        s for s in scenarios
        if s.outcome == "failed" or (s.outcome == "passed" and s.missed_windows)
    ]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; exit 0 when no verdict was false."""
    p = figures.Parser(description=__doc__.splitlines()[0])
    p.add_argument("--scenarios", type=int, default=20, help="run at least this many (20)")
    p.add_argument("--workers", type=int, default=4, help="pytest -n (4)")
    p.add_argument("--pause", type=float, default=10.0, help="seconds per freeze (10)")
    p.add_argument("--gap", type=float, default=20.0, help="mean seconds between freezes (20)")
    p.add_argument("--time-scale", type=float, default=0.2, help="as the tests use (0.2)")
    p.add_argument("--burners", type=int, default=os.cpu_count() or 2, help="one per core")
    p.add_argument("--cluster-name", default="load-honesty", help="a private local cluster")
    p.add_argument(
        "--keep-cluster",
        action="store_true",
        help="leave the cluster running (one that existed before always is)",
    )
    p.add_argument("-k", dest="keyword", default=None, help="pytest -k expression")
    p.add_argument("--seed", type=int, default=None, help="seeds pauses and sessions")
    p.add_argument("--work", type=Path, default=None, help="sessions' folder (default: temp)")
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT, help="figures folder")
    args = p.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    rng = random.Random(seed)
    out = args.work or Path(tempfile.mkdtemp(prefix="load-honesty-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"bench: seed {seed}, output {out}", flush=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KUBECONFIG"))}
    env["MOCHAOS_CLUSTER_NAME"] = args.cluster_name
    provider = LocalProvider(name=args.cluster_name)
    created = not provider.cluster_dir.exists()  # a cluster we did not start is left running
    provider.up()
    pauses = Pauses(provider, args.pause, args.gap, rng)
    pauser = threading.Thread(target=pauses.run, daemon=True)
    burning = burners(args.burners)
    scenarios: list[Scenario] = []
    t0 = time.monotonic()
    try:
        pauser.start()
        session = 0
        while len(scenarios) < args.scenarios:
            run_dir = run_session(
                session, out=out, env=env, workers=args.workers, time_scale=args.time_scale,
                seed=rng.randrange(2**31), keyword=args.keyword,
            )  # fmt: skip
            found = judge(run_dir, session, pauses.done) if run_dir.is_dir() else []
            if not found:
                print("bench: a session produced no scenario; see its log", file=sys.stderr)
                return 3
            scenarios += found
            session += 1
    finally:
        pauses.stop.set()
        pauser.join(timeout=args.pause + 5)
        stop_all(burning)
        if created and not args.keep_cluster:
            provider.down()
    elapsed = time.monotonic() - t0
    counts = Counter(s.outcome for s in scenarios)
    wrong = false_verdicts(scenarios)
    report = {
        "machine": figures.machine(), "seed": seed, "seconds": round(elapsed),
        "workers": args.workers, "burners": args.burners, "pause": args.pause,
        "pauses": len(pauses.done),
        "counts": dict(counts), "false_verdicts": len(wrong),
        "scenarios_with_a_pause": sum(s.pauses > 0 for s in scenarios),
        "scenarios": [vars(s) for s in scenarios],
    }  # fmt: skip
    path = figures.write_figures("load-honesty", report, out=args.out)
    print(f"\n{len(scenarios)} scenarios in {elapsed:.0f}s, {len(pauses.done)} apiserver "
          f"freezes of {args.pause:.0f}s, {report['scenarios_with_a_pause']} scenarios "
          f"lived through at least one")  # fmt: skip
    print("  " + ", ".join(f"{k} {counts.get(k, 0)}" for k in
                           ("passed", "inconclusive", "failed", "error")))  # fmt: skip
    print(f"  false verdicts: {len(wrong)}")
    for s in scenarios:
        if s.outcome != "passed":
            print(f"  {s.outcome.upper()} {s.nodeid} (session {s.session}, {s.pauses} "
                  f"pauses): {s.message}")  # fmt: skip
    print(f"figures: {path}")
    return 1 if wrong else 0


if __name__ == "__main__":
    figures.run(main)
