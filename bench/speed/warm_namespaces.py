"""Benchmark (issue 24): a real manager's cases with and without namespaces made ready ahead.

Runs the same cases in the order given (default: the ``completed`` sweep, then the seed, so
that with namespaces made ready ahead the seed finds its namespace ready, as every case
but a session's first does) one after the other in one pytest session (``-n 0``) on a real
manager, once with ``--mochaos-warm-namespaces 0`` and once with the default (1), and
prints per case the seconds its test spent before the scenario could start (the
operator-start phases: the namespace's MatrixOne and the manager), from the scenario's
start to its first fault, and their sum (set-up to first fault), then the medians, their
ratio, and the last case's set-up to first fault. The real manager binds port 9443
machine-wide: on a shared machine run this under the lock you use for that port.
Run: ``python bench/run.py warm_namespaces --help``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import figures

from mochaos.errors import UsageError
from mochaos.observe.history import ActionRecord, History
from mochaos.report.child_pytest import pytest_command, run_pytest

SUITE = "suites/test_scalein_during_migration.py"
CASES = (
    f"{SUITE}::test_scalein_during_migration_sweep[completed]",
    f"{SUITE}::test_scalein_during_migration",
)
"""Node ids, run in this order: the seed last, so that it is not the session's first."""
ROOT = Path(__file__).resolve().parents[2]
START_PHASES = ("operator start",)
"""Phase names (prefixes) of a test's time before its scenario starts on its namespace."""


def session(target: str, warm: int, reports: Path, *, cases: Sequence[str], seed: int) -> float:
    """One ``-n 0`` session of the cases, in their order; its wall seconds."""
    args = [
        *cases, "-n", "0", "-p", "no:cacheprovider", "--chaos-seed", str(seed),
        "--operator", target, "--mochaos-warm-namespaces", str(warm),
        "--mochaos-reports-dir", str(reports),
    ]  # fmt: skip
    print(f"bench: $ {' '.join(pytest_command(args)[2:])}", file=sys.stderr, flush=True)
    return run_pytest(args, reports_dir=reports, cwd=ROOT, log=reports.with_suffix(".log")).seconds


def to_first_fault(history: History) -> float | None:
    """Seconds from the scenario's start to its first fault landing in its window."""
    start = next((m.t for m in history.markers() if m.label == "scenario"), None)
    fault = next((a.t for a in history if isinstance(a, ActionRecord) and a.in_window), None)
    return None if start is None or fault is None else fault - start


def cases(reports: Path) -> dict[str, dict[str, Any]]:
    """Per case (in the order they ran): seconds before the scenario, to the first fault."""
    out = {}
    for folder in sorted((reports / "latest").glob("*/"), key=lambda f: f.stat().st_mtime):
        result = folder / "result.json"
        if not result.exists():
            continue
        r = json.loads(result.read_text())
        before = sum(
            p["seconds"] for p in r.get("phases", []) if p["name"].startswith(START_PHASES)
        )
        history = folder / "history.jsonl"
        fault = to_first_fault(History.from_jsonl(history)) if history.exists() else None
        out[folder.name.rsplit(".", 1)[-1]] = {
            "outcome": r["outcome"], "before_scenario": before, "to_first_fault": fault,
            "setup_to_first_fault": None if fault is None else before + fault,
        }  # fmt: skip
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Both sessions, the per-case table and the ratio of the medians."""
    p = figures.Parser(prog="python bench/run.py warm_namespaces", description=__doc__)
    p.add_argument("cases", nargs="*", default=list(CASES), help="node ids, in run order")
    p.add_argument("--operator", default=None, help="default: source:$MOCHAOS_OPERATOR_SRC@2301e3b")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT)
    args = p.parse_args(argv)
    target = args.operator
    if target is None:
        src = os.environ.get("MOCHAOS_OPERATOR_SRC")
        if not src:
            raise UsageError("no real manager", hint="set MOCHAOS_OPERATOR_SRC or give --operator")
        target = f"source:{src}@2301e3b"
    run_id = figures.new_run_id()
    work = args.out / f"warm-namespaces-{run_id}"
    work.mkdir(parents=True, exist_ok=True)
    found: dict[int, dict[str, dict[str, Any]]] = {}
    wall: dict[int, float] = {}
    for warm in (0, 1):
        reports = work / f"warm-{warm}"
        wall[warm] = session(target, warm, reports, cases=args.cases, seed=args.seed)
        found[warm] = cases(reports)
    rows = []
    for name in found[0]:
        cold, hot = found[0][name], found[1].get(name, {})
        rows.append([
            name, figures.fmt(cold["before_scenario"], "s", 1),
            figures.fmt(hot.get("before_scenario"), "s", 1),
            figures.fmt(cold["to_first_fault"], "s", 1),
            figures.fmt(hot.get("to_first_fault"), "s", 1),
            figures.fmt(cold["setup_to_first_fault"], "s", 1),
            figures.fmt(hot.get("setup_to_first_fault"), "s", 1),
            f"{cold['outcome']}/{hot.get('outcome', '–')}",
        ])  # fmt: skip
    print(figures.table(
        ["case", "before scenario, off", "on", "to first fault, off", "on",
         "set-up to first fault, off", "on", "outcome off/on"],
        rows,
    ))  # fmt: skip
    medians = {
        warm: {k: figures.median([c[k] for c in found[warm].values() if c[k] is not None])
               for k in ("before_scenario", "to_first_fault", "setup_to_first_fault")}
        for warm in (0, 1)
    }  # fmt: skip
    for k in ("before_scenario", "to_first_fault", "setup_to_first_fault"):
        print(f"{k}: median off {figures.fmt(medians[0][k], 's', 1)}, on "
              f"{figures.fmt(medians[1][k], 's', 1)}; ratio "
              f"{figures.fmt(figures.ratio(medians[0][k], medians[1][k]))}")  # fmt: skip
    if rows:
        last = rows[-1]
        print(f"{last[0]} (run last): set-up to first fault off {last[5]}, on {last[6]}")
    print(f"session wall time: off {wall[0]:.0f}s, on {wall[1]:.0f}s")
    path = figures.write_figures(
        "warm-namespaces",
        {"machine": figures.machine(), "cases": found, "medians": medians, "wall": wall},
        out=args.out, run_id=run_id,
    )  # fmt: skip
    print(f"figures: {path}")
    return 0


if __name__ == "__main__":
    figures.run(main)
