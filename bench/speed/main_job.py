"""Benchmark (issues 17, 24): the README's main job, concurrent by default vs one at a time,
or this checkout vs an earlier revision of it.

Runs ``pytest suites/ -k scalein_during_migration`` exactly as the README writes it
(default target ``model:upstream``, time scale 1, no ``-n``: the suites run concurrently
by default) and the same with ``-n 0`` (one scenario at a time), on the same warm local
cluster and seed. With ``--baseline REV`` it runs the job as written at ``REV`` (exported
from this repository's git history, run from the export) and at this checkout instead, one
after the other. Prints the wall times, their ratio, and each scenario's outcome and
violated invariants in both; exit 1 when any verdict differs.
Run: ``python bench/run.py main_job --help``.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mochaos.report.child_pytest import pytest_command, run_pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Run:
    """One run of the main job."""

    mode: str
    seconds: float
    exit_code: int
    verdicts: dict[str, tuple[str, tuple[str, ...]]]
    """test -> (outcome, violated invariants)."""


def verdicts(reports: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Outcome and violated invariants per test, from the run's summary.json."""
    summary = json.loads((reports / "latest" / "summary.json").read_text())
    out = {}
    for t in summary["tests"]:
        failed = tuple(sorted(v["invariant"] for v in t["verdicts"] if v["status"] == "fail"))
        out[t["nodeid"].rsplit("::", 1)[-1]] = (t["outcome"], failed)
    return out


def export(rev: str, into: Path) -> Path:
    """This repository's tree at ``rev``, written into ``into``."""
    tree = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", rev], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tree)) as tar:
        tar.extractall(into, filter="data")
    return into


def run(mode: str, extra: list[str], *, out: Path, keyword: str, seed: int,
        operator: str | None, cwd: Path = ROOT) -> Run:  # fmt: skip
    """One run of ``pytest suites/ -k <keyword>`` with ``extra`` arguments, from ``cwd`` (a
    checkout: its ``mochaos`` is the one imported)."""
    reports = out / ("reports-" + re.sub(r"[^A-Za-z0-9]+", "-", mode).strip("-"))
    args = [
        "suites/", "-k", keyword, "-p", "no:cacheprovider", "--chaos-seed", str(seed),
        "--mochaos-reports-dir", str(reports), *extra,
        *(["--operator", operator] if operator else []),
    ]  # fmt: skip
    print(f"bench: $ {' '.join(pytest_command(args)[2:])}", file=sys.stderr, flush=True)
    child = run_pytest(args, reports_dir=reports, cwd=cwd, log=reports.with_suffix(".log"))
    seconds = child.seconds
    print(f"bench: {mode}: {seconds:.1f}s, exit {child.exit_code}", file=sys.stderr, flush=True)
    found = verdicts(reports) if child.summary is not None else {}
    return Run(mode, seconds, child.exit_code, found)


def main(argv: Sequence[str] | None = None) -> int:
    """Run both modes, print the table and the ratio; exit 1 when verdicts differ."""
    p = argparse.ArgumentParser(prog="python bench/run.py main_job", description=__doc__)
    p.add_argument("-k", dest="keyword", default="scalein_during_migration")
    p.add_argument("--seed", type=int, default=1234, help="--chaos-seed of both runs")
    p.add_argument("--operator", default=None, help="operator target (default: the README's)")
    p.add_argument("--baseline", metavar="REV", help="compare with the job at this revision")
    p.add_argument("--out", type=Path, default=None, help="keep logs and reports here")
    args = p.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="mochaos-bench-main-job-"))
    out.mkdir(parents=True, exist_ok=True)
    common = {"out": out, "keyword": args.keyword, "seed": args.seed, "operator": args.operator}
    if args.baseline:
        tree = export(args.baseline, out / f"checkout-{args.baseline}")
        first = run(f"at {args.baseline}", [], cwd=tree, **common)
        second = run("this checkout", [], **common)
    else:
        second = run("default (concurrent)", [], **common)
        first = run("-n 0 (sequential)", ["-n", "0"], **common)
    names = sorted(set(first.verdicts) | set(second.verdicts))
    differ = [n for n in names if first.verdicts.get(n) != second.verdicts.get(n)]
    print(f"| scenario | {first.mode} | {second.mode} |")
    print("|---|---|---|")
    for n in names:
        a = first.verdicts.get(n, ("missing", ()))
        b = second.verdicts.get(n, ("missing", ()))
        print(f"| {n} | {a[0]} {','.join(a[1])} | {b[0]} {','.join(b[1])} |")
    print(f"\nwall time: {first.mode} {first.seconds:.0f}s, {second.mode} {second.seconds:.0f}s; "
          f"ratio {first.seconds / second.seconds:.2f}")  # fmt: skip
    print("verdicts: " + ("identical" if not differ and names else "DIFFER: " + ", ".join(differ)))
    print(f"logs: {out}")
    return 1 if differ or not names else 0


if __name__ == "__main__":
    sys.exit(main())
