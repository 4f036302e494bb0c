"""Benchmark (issue 17): the README's main job, concurrent by default vs one at a time.

Runs ``pytest suites/ -k scalein_during_migration`` exactly as the README writes it
(default target ``model:upstream``, time scale 1, no ``-n``: the suites run concurrently
by default) and the same with ``-n 0`` (one scenario at a time), on the same warm local
cluster and seed. Prints both wall times, their ratio, and each scenario's outcome and
violated invariants in both modes; exit 1 when any verdict differs.
Run: ``python bench/main_job.py --help``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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


def run(mode: str, extra: list[str], *, out: Path, keyword: str, seed: int,
        operator: str | None) -> Run:  # fmt: skip
    """One run of ``pytest suites/ -k <keyword>`` with ``extra`` arguments."""
    reports = out / f"reports-{mode}"
    cmd = [
        sys.executable, "-m", "pytest", "suites/", "-k", keyword, "-p", "no:cacheprovider",
        "--chaos-seed", str(seed), "--mochaos-reports-dir", str(reports), *extra,
        *(["--operator", operator] if operator else []),
    ]  # fmt: skip
    print(f"bench: $ {' '.join(cmd[2:])}", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    with (out / f"pytest-{mode}.log").open("w") as log:
        proc = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, check=False)
    seconds = time.monotonic() - t0
    print(f"bench: {mode}: {seconds:.1f}s, exit {proc.returncode}", file=sys.stderr, flush=True)
    found = verdicts(reports) if (reports / "latest" / "summary.json").exists() else {}
    return Run(mode, seconds, proc.returncode, found)


def main(argv: Sequence[str] | None = None) -> int:
    """Run both modes, print the table and the ratio; exit 1 when verdicts differ."""
    p = argparse.ArgumentParser(prog="python bench/main_job.py", description=__doc__)
    p.add_argument("-k", dest="keyword", default="scalein_during_migration")
    p.add_argument("--seed", type=int, default=1234, help="--chaos-seed of both runs")
    p.add_argument("--operator", default=None, help="operator target (default: the README's)")
    p.add_argument("--out", type=Path, default=None, help="keep logs and reports here")
    args = p.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="mochaos-bench-main-job-"))
    out.mkdir(parents=True, exist_ok=True)
    common = {"out": out, "keyword": args.keyword, "seed": args.seed, "operator": args.operator}
    concurrent = run("default", [], **common)
    sequential = run("sequential", ["-n", "0"], **common)
    names = sorted(set(concurrent.verdicts) | set(sequential.verdicts))
    differ = [n for n in names if concurrent.verdicts.get(n) != sequential.verdicts.get(n)]
    print("| scenario | default (concurrent) | -n 0 (sequential) |")
    print("|---|---|---|")
    for n in names:
        a = concurrent.verdicts.get(n, ("missing", ()))
        b = sequential.verdicts.get(n, ("missing", ()))
        print(f"| {n} | {a[0]} {','.join(a[1])} | {b[0]} {','.join(b[1])} |")
    print(f"\nwall time: default {concurrent.seconds:.0f}s, -n 0 {sequential.seconds:.0f}s; "
          f"ratio {sequential.seconds / concurrent.seconds:.2f}")  # fmt: skip
    print("verdicts: " + ("identical" if not differ and names else "DIFFER: " + ", ".join(differ)))
    print(f"logs: {out}")
    return 1 if differ or not names else 0


if __name__ == "__main__":
    sys.exit(main())
