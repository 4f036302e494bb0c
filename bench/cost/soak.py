"""Benchmark (issue 17): the invariant monitor's CPU over a soak of the seed scenario.

Runs the seed scenario again and again (one child pytest session each, one scenario at a
time) for ``--minutes`` (default 60), and reads from each result the CPU seconds the
invariant monitor spent judging the run as it went (``monitor_cpu``: its thread's updates
and settle's) next to the scenario's wall time. Prints per run and overall the monitor's
share of one core; the target is below 5 %. Each run has its own history: what a soak
shows is that the monitor's cost does not creep up run after run, nor with the length of
one run. Run: ``python bench/run.py soak --help``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import figures

from mochaos.report.child_pytest import run_pytest

KEYWORD = "test_scalein_during_migration and not race and not sweep"
TARGET_SHARE = 0.05
"""The monitor's CPU must stay below this share of one core."""


def one_run(index: int, *, out: Path, operator: str, keyword: str) -> dict[str, object]:
    """One child pytest session of the seed scenario; its monitor CPU and duration."""
    reports = out / f"run-{index:03d}"
    args = [
        "--pyargs", "mochaos.suites", "-k", keyword, "-n", "0", "-p", "no:cacheprovider",
        "--operator", operator, "--mochaos-reports-dir", str(reports),
    ]  # fmt: skip
    child = run_pytest(args, reports_dir=reports, log=out / f"run-{index:03d}.log")
    wall = child.seconds
    if child.summary is None:
        return {"index": index, "exit": child.exit_code, "problem": "no summary", "wall": wall}
    (test,) = child.summary["tests"]
    return {
        "index": index,
        "exit": child.exit_code,
        "outcome": test["outcome"],
        "duration": test["duration"],
        "monitor_cpu": test.get("monitor_cpu", 0.0),
        "wall": wall,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Soak, print the table and the overall share; exit 1 above the target."""
    p = figures.Parser(prog="python bench/run.py soak", description=__doc__)
    p.add_argument("--minutes", type=float, default=60.0, help="how long to keep looping")
    p.add_argument("--operator", default="model:upstream", help="operator target")
    p.add_argument("-k", dest="keyword", default=KEYWORD)
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT)
    args = p.parse_args(argv)
    work = args.out / f"soak-{int(time.time())}"
    work.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + args.minutes * 60
    runs: list[dict[str, object]] = []
    while time.monotonic() < deadline:
        r = one_run(len(runs), out=work, operator=args.operator, keyword=args.keyword)
        runs.append(r)
        share = (
            f"{r['monitor_cpu'] / r['duration']:.2%}"  # type: ignore[operator]
            if r.get("duration")
            else "–"
        )
        print(f"bench: run {r['index']}: {r.get('outcome', r.get('problem'))}, "
              f"monitor {share} of one core", file=sys.stderr, flush=True)  # fmt: skip
    judged = [r for r in runs if r.get("duration")]
    cpu = sum(float(r["monitor_cpu"]) for r in judged)  # type: ignore[arg-type]
    seconds = sum(float(r["duration"]) for r in judged)  # type: ignore[arg-type]
    shares = [float(r["monitor_cpu"]) / float(r["duration"]) for r in judged]  # type: ignore[arg-type]
    rows = [
        [str(r["index"]), str(r.get("outcome", r.get("problem"))),
         figures.fmt(r.get("duration"), " s", 1),  # type: ignore[arg-type]
         figures.fmt(r.get("monitor_cpu"), " s", 3),  # type: ignore[arg-type]
         figures.fmt(s * 100, " %", 3)]
        for r, s in zip(judged, shares, strict=True)
    ]  # fmt: skip
    print(figures.table(["run", "outcome", "scenario", "monitor CPU", "share"], rows))
    overall = cpu / seconds if seconds else None
    worst = max(shares, default=None)
    print(
        f"\n{len(judged)} runs judged in {args.minutes:g} min; monitor CPU {cpu:.2f} s over "
        f"{seconds:.0f} s of scenarios: {figures.fmt(overall and overall * 100, ' %', 3)} of "
        f"one core overall, max {figures.fmt(worst and worst * 100, ' %', 3)} per run "
        f"(target < {TARGET_SHARE:.0%})"
    )
    path = figures.write_figures(
        "soak",
        {"machine": figures.machine(), "operator": args.operator, "runs": runs,
         "monitor_share_overall": overall, "monitor_share_max": worst},
        out=args.out,
    )  # fmt: skip
    print(f"figures: {path}")
    return 0 if judged and max(shares) < TARGET_SHARE else 1


if __name__ == "__main__":
    figures.run(main)
