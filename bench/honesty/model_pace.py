"""Benchmark (issue 24): the model's phases next to the real manager's, from one run of each.

Runs the same scenarios (default: the seed and the ``completed`` sweep, which between them
go through every phase) on the reference model and on the real manager, as child pytest
sessions on the same warm local cluster, then reads each phase's durations from the
recorded histories (``bench/honesty/phases.py``) and prints, per phase, the medians, the ratio
model / real and whether it is within 25 %; then each scenario's verdict on both. With
``--from MODEL_REPORTS REAL_REPORTS`` it reads two earlier runs' report folders instead.
The real manager binds port 9443 on the whole machine: where several people share the
machine, run this under whatever lock you use for that port.
Run: ``python bench/run.py model_pace --help``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import figures
import phases

from mochaos.errors import UsageError
from mochaos.observe.history import History
from mochaos.report.child_pytest import pytest_command, run_pytest

KEYWORD = "scalein_during_migration and not race and (not sweep or completed)"
TOLERANCE = 0.25
"""A model phase within this share of the real manager's counts as paced like it."""
ROOT = Path(__file__).resolve().parents[2]


def run_suites(target: str, keyword: str, reports: Path, *, seed: int, workers: str) -> float:
    """One child ``pytest suites/ -k <keyword>`` on ``target``; its wall seconds."""
    args = [
        "suites/", "-k", keyword, "-n", workers, "-p", "no:cacheprovider",
        "--chaos-seed", str(seed), "--operator", target, "--mochaos-reports-dir", str(reports),
    ]  # fmt: skip
    print(f"bench: $ {' '.join(pytest_command(args)[2:])}", file=sys.stderr, flush=True)
    log = reports.parent / f"{reports.name}.log"
    return run_pytest(args, reports_dir=reports, cwd=ROOT, log=log).seconds


def histories(reports: Path) -> dict[str, History]:
    """Scenario name -> its recorded history, from a run's ``latest`` report folder."""
    found = {}
    for path in sorted((reports / "latest").glob("*/history.jsonl")):
        found[path.parent.name.rsplit(".", 1)[-1]] = History.from_jsonl(path)
    if not found:
        raise UsageError(f"no history.jsonl under {reports}/latest", hint="give a run's folder")
    return found


def verdicts(reports: Path) -> dict[str, str]:
    """Scenario name -> outcome, failed invariants and seconds to verdict (result.json)."""
    out = {}
    for path in sorted((reports / "latest").glob("*/result.json")):
        r = json.loads(path.read_text())
        failed = sorted(v["invariant"] for v in r.get("verdicts", []) if v["status"] == "fail")
        out[path.parent.name.rsplit(".", 1)[-1]] = (
            f"{r['outcome']} {','.join(failed)} ({r.get('duration', 0):.0f} s)"
        )
    return out


def phase_samples(runs: dict[str, History]) -> dict[str, list[float]]:
    """Phase id -> every sample of that phase over the run's scenarios."""
    return {
        pid: [x for h in runs.values() for x in how(h)] for pid, (_, how) in phases.PHASES.items()
    }


def spread(values: list[float]) -> str:
    """``min–max`` of the samples (an en dash when there are none)."""
    return f"{min(values):.1f}–{max(values):.1f}" if values else "–"


def compare(model: dict[str, list[float]], real: dict[str, list[float]]) -> list[dict[str, Any]]:
    """Per phase: medians, sample counts, ratio model/real, within the tolerance."""
    rows = []
    for pid, (what, _) in phases.PHASES.items():
        m, r = figures.median(model[pid]), figures.median(real[pid])
        ratio = figures.ratio(m, r)
        rows.append({
            "phase": pid, "what": what, "model": m, "real": r, "ratio": ratio,
            "n_model": len(model[pid]), "n_real": len(real[pid]),
            "range_model": spread(model[pid]), "range_real": spread(real[pid]),
            "within": None if ratio is None else abs(ratio - 1) <= TOLERANCE,
        })  # fmt: skip
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Run (or read) both, print the phase table and the verdicts."""
    p = figures.Parser(prog="python bench/run.py model_pace", description=__doc__)
    p.add_argument("-k", dest="keyword", default=KEYWORD)
    p.add_argument("--model", default="model:upstream")
    p.add_argument("--real", default=None, help="default: source:$MOCHAOS_OPERATOR_SRC@2301e3b")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("-n", dest="workers", default="2", help="-n of both child sessions")
    p.add_argument("--from", dest="reuse", nargs=2, type=Path, metavar=("MODEL", "REAL"))
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT)
    args = p.parse_args(argv)
    run_id = figures.new_run_id()
    seconds: dict[str, float] = {}
    if args.reuse:
        model_reports, real_reports = args.reuse
    else:
        real = args.real
        if real is None:
            src = os.environ.get("MOCHAOS_OPERATOR_SRC")
            if not src:
                raise UsageError("no real manager to compare with",
                                 hint="set MOCHAOS_OPERATOR_SRC or give --real")  # fmt: skip
            real = f"source:{src}@2301e3b"
        work = args.out / f"model-pace-{run_id}"
        work.mkdir(parents=True, exist_ok=True)
        model_reports, real_reports = work / "model", work / "real"
        for name, target, reports in (("model", args.model, model_reports),
                                      ("real", real, real_reports)):  # fmt: skip
            seconds[name] = run_suites(
                target, args.keyword, reports, seed=args.seed, workers=args.workers
            )
    model_runs, real_runs = histories(model_reports), histories(real_reports)
    rows = compare(phase_samples(model_runs), phase_samples(real_runs))
    print(figures.table(
        ["phase", "model s", "(range)", "real s", "(range)", "model/real", "within 25 %",
         "samples"],
        [[r["what"], figures.fmt(r["model"]), r["range_model"], figures.fmt(r["real"]),
          r["range_real"], figures.fmt(r["ratio"]),
          {True: "yes", False: "NO", None: "–"}[r["within"]], f"{r['n_model']}/{r['n_real']}"]
         for r in rows],
    ))  # fmt: skip
    mv, rv = verdicts(model_reports), verdicts(real_reports)
    print()
    print(figures.table(
        ["scenario", "model", "real"],
        [[n, mv.get(n, "–"), rv.get(n, "–")] for n in sorted(set(mv) | set(rv))],
    ))  # fmt: skip
    path = figures.write_figures(
        "model-pace",
        {"machine": figures.machine(), "phases": rows, "verdicts": {"model": mv, "real": rv},
         "wall_seconds": seconds, "reports": [str(model_reports), str(real_reports)]},
        out=args.out, run_id=run_id,
    )  # fmt: skip
    print(f"\nfigures: {path}")
    return 0


if __name__ == "__main__":
    figures.run(main)
