"""Benchmark: the operator frozen from outside the framework never gives a failed verdict.

Runs one suite scenario ``--runs`` times (one test per run, ``-n`` at once) against
``--operator`` while a separate process (``tests/safety/child/freezer.py``) stops each new
operator process at a random moment ``--after`` seconds after it started, for ``--seconds``
seconds. Pick a scenario the target passes: every run must then pass or be inconclusive.
Prints the outcomes and the freezes; figures in ``reports/bench/frozen-operator-<run-id>.json``.
Exit 0 when no run failed. ``--seconds 0`` runs without freezes (to check the scenario
passes). The freezer is stopped by pid at the end.
Run: ``python bench/run.py frozen_operator --help``.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import figures

from mochaos.report.child_pytest import run_pytest

ROOT = Path(__file__).resolve().parents[2]
SEED = "test_scalein_during_migration.test_scalein_during_migration"
FREEZER = ROOT / "tests" / "safety" / "child" / "freezer.py"
WRAPPER = """import pytest
from {module} import {function} as scenario_body

pytestmark = pytest.mark.scenario


@pytest.mark.parametrize("run", range({runs}))
def test_frozen(run, {fixtures}):
    scenario_body({fixtures})
"""


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--operator", default="model:fixed")
    p.add_argument("--scenario", default=SEED, help="<suite module>.<test function> of "
                   "mochaos.suites")  # fmt: skip
    p.add_argument("--fixtures", default="scenario,seed", help="the function's fixtures")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("-n", dest="workers", type=int, default=5)
    p.add_argument("--seconds", type=float, default=15.0, help="length of each freeze")
    p.add_argument("--after", type=float, nargs=2, default=(3.0, 30.0))
    p.add_argument("--time-scale", default="0.2", help="for model: targets")
    p.add_argument("--out", type=Path, default=ROOT / "reports" / "bench")
    args = p.parse_args(argv)
    module, function = args.scenario.rsplit(".", 1)
    work = Path(tempfile.mkdtemp(prefix="frozen-operator-"))
    wrapper = work / "test_frozen.py"
    wrapper.write_text(WRAPPER.format(module=f"mochaos.suites.{module}", function=function,
                                      runs=args.runs, fixtures=args.fixtures))  # fmt: skip
    (work / "conftest.py").write_text("from mochaos.suites.conftest import *  # noqa: F403\n")
    freezes = work / "freezes.jsonl"
    freezer = None
    if args.seconds > 0:
        freezer = subprocess.Popen(
            # Only this run's operators: their logs and configuration live under its basetemp
            # (a webhook host's under the cluster's folder: never frozen).
            [sys.executable, str(FREEZER), "--match", f"{work / 'tmp'}/",
             "--seconds", str(args.seconds), "--after", *map(str, args.after),
             "--out", str(freezes)],
        )  # fmt: skip
    job = [str(wrapper), "-p", "no:cacheprovider", "-q", "-n", str(args.workers),
           "--operator", args.operator, "--basetemp", str(work / "tmp"),
           "--mochaos-reports-dir", str(work / "reports")]  # fmt: skip
    if args.operator.startswith("model:"):
        job += ["--time-scale", args.time_scale]
    try:
        child = run_pytest(job, reports_dir=work / "reports", cwd=ROOT)
    finally:
        if freezer is not None:
            freezer.send_signal(signal.SIGTERM)
            freezer.wait(timeout=30)
    summary = child.summary
    if summary is None:
        raise SystemExit(f"bench: {child.why_no_summary} (pytest exit {child.exit_code})")
    outcomes = [t["outcome"] for t in summary["tests"]]
    frozen = [json.loads(ln) for ln in freezes.read_text().splitlines()] if freezes.exists() else []
    counts = Counter(outcomes)
    print(figures.table(["outcome", "runs"], [[o, str(n)] for o, n in sorted(counts.items())]))
    print(f"{len(frozen)} freezes of {args.seconds:.0f}s; work folder {work}")
    for t in summary["tests"]:
        if t["outcome"] not in ("passed", "inconclusive"):
            print(f"  {t['outcome']}: {t.get('message', '')[:300]}")
    path = figures.write_figures("frozen-operator", {
        "operator": args.operator, "scenario": args.scenario, "runs": args.runs,
        "freeze_seconds": args.seconds, "after": list(args.after), "outcomes": dict(counts),
        "freezes": frozen, "machine": figures.machine(),
    }, out=args.out)  # fmt: skip
    print(f"figures: {path}")
    return 0 if counts.get("failed", 0) == 0 else 1


if __name__ == "__main__":
    figures.run(main)
