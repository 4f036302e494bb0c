"""Benchmark (issue 6): wall time of the suites with ``-n 1`` and ``-n 2``, as a ratio.

Runs ``pytest suites/ --operator <target> --time-scale <s> --chaos-seed <seed> -n N`` for
N = 1 and 2 on the same local cluster, reads each run's JUnit file and checks every
scenario got the same verdict both times. Exit 0 when they agree, 1 when they differ.
Run: ``python bench/run.py parallel --help``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mochaos.report.child_pytest import pytest_command, reports_options, run_pytest
from mochaos.report.junit import read_junit

ROOT = Path(__file__).resolve().parents[2]
OUTCOMES = ("passed", "failure", "error", "skipped")


@dataclass(frozen=True)
class Run:
    """One pytest run of the suites: workers, wall seconds, exit status, verdict per test."""

    workers: int
    seconds: float
    exit_code: int
    verdicts: dict[str, str]


def read_verdicts(junit: Path) -> dict[str, str]:
    """Test name -> passed / failure / error / skipped, from a JUnit XML file."""
    return {name: case.outcome for name, case in read_junit(junit).items()}


def run_suites(workers: int, *, out: Path, operator: str, time_scale: float, seed: int,
               keyword: str | None) -> Run:  # fmt: skip
    """Run the suites once with ``workers`` xdist workers and time it."""
    junit = out / f"junit-n{workers}.xml"
    reports = out / f"reports-n{workers}"
    args = [
        "suites", "-p", "no:cacheprovider", "-q",
        "-n", str(workers), "--operator", operator, "--time-scale", str(time_scale),
        "--chaos-seed", str(seed), *reports_options(reports, junit),
        *(["-k", keyword] if keyword else []),
    ]  # fmt: skip
    print(f"bench: $ {' '.join(pytest_command(args)[2:])}", file=sys.stderr, flush=True)
    child = run_pytest(args, reports_dir=reports, cwd=ROOT, log=out / f"pytest-n{workers}.log")
    seconds = child.seconds
    verdicts = read_verdicts(junit) if junit.exists() else {}
    print(f"bench: -n {workers}: {seconds:.1f}s, exit {child.exit_code}", file=sys.stderr)
    return Run(workers, seconds, child.exit_code, verdicts)


def compare(serial: Run, parallel: Run) -> list[str]:
    """One line per test whose verdict differs between the two runs (empty: they agree)."""
    names = sorted(set(serial.verdicts) | set(parallel.verdicts))
    return [
        f"{n}: -n 1 {serial.verdicts.get(n, 'missing')}, -n 2 {parallel.verdicts.get(n, 'missing')}"
        for n in names
        if serial.verdicts.get(n) != parallel.verdicts.get(n)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Run both, print the table and the ratio; exit 1 when verdicts differ."""
    p = argparse.ArgumentParser(prog="python bench/run.py parallel", description=__doc__)
    p.add_argument("--operator", default="model:fixed", help="operator target (model:fixed)")
    p.add_argument("--time-scale", type=float, default=0.2, help="--time-scale (default 0.2)")
    p.add_argument("--seed", type=int, default=1234, help="--chaos-seed of both runs")
    p.add_argument("-k", dest="keyword", default=None, help="pytest -k expression")
    p.add_argument("--out", type=Path, default=None, help="keep logs and JUnit files here")
    args = p.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="mochaos-bench-parallel-"))
    out.mkdir(parents=True, exist_ok=True)
    options = {"out": out, "operator": args.operator, "time_scale": args.time_scale,
               "seed": args.seed, "keyword": args.keyword}  # fmt: skip
    serial = run_suites(1, **options)
    parallel = run_suites(2, **options)
    if not serial.verdicts or not parallel.verdicts:
        print(f"bench: a run reported no tests; see the logs in {out}", file=sys.stderr)
        return 1
    differ = compare(serial, parallel)
    print(f"| workers | wall time | exit | tests | {' | '.join(OUTCOMES)} |")
    print("|---:" * (4 + len(OUTCOMES)) + "|")
    for run in (serial, parallel):
        counts = [sum(v == o for v in run.verdicts.values()) for o in OUTCOMES]
        print(f"| {run.workers} | {run.seconds:.1f}s | {run.exit_code} | {len(run.verdicts)} | "
              + " | ".join(map(str, counts)) + " |")  # fmt: skip
    print(f"\nratio -n 1 / -n 2: {serial.seconds / parallel.seconds:.2f}")
    print("verdicts: " + ("identical" if not differ else "DIFFER"))
    for line in differ:
        print(f"  {line}")
    print(f"logs: {out}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
