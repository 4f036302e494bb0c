"""Benchmark (issue 21): one job from two mo-chaos checkouts in one invocation, before/after.

``--baseline <checkout>`` (with ``--baseline-python``, the interpreter of a venv where that
checkout is installed) is the "before" — e.g. an export of main, whose local cluster runs
the Python kruise double and starts both doubles with every cluster — and this checkout is
the "after" (the real kruise-manager, started only for real targets). For each, in turn, on
a fresh private local cluster of its own (``down`` before and after; the binary and Go
caches stay warm), the job runs as a child pytest with the same seed:

- ``--job main``: the README's main job (``-k scalein_during_migration`` on the default
  ``model:upstream``, concurrent by default);
- ``--job seed``: the seed scenario on the real manager ``--operator source:<checkout>@<rev>``
  (hold ``/work/locks/port9443.lock``-style machine locks yourself: it starts a real
  operator).

With ``--fresh-cache`` each run gets an empty mo-chaos cache of its own (Go's caches stay
warm): the first run on a new machine, and which components it had to build. Prints each
run's wall time (builds and cluster start included), the scenarios' own seconds, outcome
and violated invariants, and the after/before ratios. Run: ``python bench/run.py before_after
--help``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import figures

from mochaos.errors import UsageError
from mochaos.report.child_pytest import pytest_command, run_pytest
from mochaos.suites import SEED as SEED_K

ROOT = Path(__file__).resolve().parents[2]


def job(args: Any, checkout: Path, python: str, label: str, out: Path) -> dict[str, Any]:
    """Run the job from ``checkout`` with ``python`` on a private cluster; its figures."""
    name = f"bench-ba-{label}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update({"MOCHAOS_CLUSTER_NAME": name, "GONOSUMDB": "github.com/matrixorigin"})
    cache = out / f"cache-{label}"
    if args.fresh_cache:
        env["MOCHAOS_CACHE"] = str(cache)
    reports = out / f"reports-{label}"
    if args.job == "main":
        target = ["-k", "scalein_during_migration"]
    else:
        target = ["-k", SEED_K, "-n", "0", "--operator", f"source:{args.operator_src}@{args.rev}"]
    job = ["suites/", "-p", "no:cacheprovider", *target,
           "--chaos-seed", str(args.seed), "--mochaos-reports-dir", str(reports)]  # fmt: skip
    down = [python, "-m", "mochaos", "cluster", "down", "--name", name]
    subprocess.run(down, cwd=checkout, env=env, check=False, capture_output=True)
    shown = " ".join(pytest_command(job, python)[1:])
    print(f"bench: {label}: $ {shown} (in {checkout})", file=sys.stderr, flush=True)
    child = run_pytest(job, reports_dir=reports, cwd=checkout, env=env, python=python,
                       log=out / f"pytest-{label}.log")  # fmt: skip
    wall = child.seconds
    subprocess.run(down, cwd=checkout, env=env, check=False, capture_output=True)
    print(f"bench: {label}: {wall:.1f}s, exit {child.exit_code}", file=sys.stderr, flush=True)
    tests = child.summary["tests"] if child.summary is not None else []
    built = sorted(p.name for p in (cache / "bin").iterdir()) if args.fresh_cache else []
    return {
        "wall_s": wall,
        "exit": child.exit_code,
        "built": built,
        "tests": {
            t["nodeid"].rsplit("::", 1)[-1]: {
                "outcome": t["outcome"],
                "failed": sorted(v["invariant"] for v in t["verdicts"] if v["status"] == "fail"),
                "seconds": t.get("duration"),
                "max_finalize_retries": t.get("max_finalize_retries"),
            }
            for t in tests
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = figures.Parser(prog="python bench/run.py before_after", description=__doc__)
    p.add_argument("--baseline", type=Path, required=True, help="the 'before' checkout")
    p.add_argument("--baseline-python", required=True, help="python of the baseline's venv")
    p.add_argument("--job", choices=("main", "seed"), default="seed")
    p.add_argument("--operator-src", default=os.environ.get("MOCHAOS_OPERATOR_SRC"),
                   help="operator checkout for --job seed (MOCHAOS_OPERATOR_SRC)")  # fmt: skip
    p.add_argument("--rev", default="2301e3b", help="operator revision for --job seed")
    p.add_argument("--seed", type=int, default=1234, help="--chaos-seed of both runs")
    p.add_argument("--fresh-cache", action="store_true", help="an empty mo-chaos cache each")
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT)
    args = p.parse_args(argv)
    if args.job == "seed" and not args.operator_src:
        raise UsageError("--job seed needs an operator checkout", hint="pass --operator-src")
    if not (args.baseline / "suites").is_dir():
        raise UsageError(f"{args.baseline} is not a mo-chaos checkout", hint="no suites/ in it")
    logs = Path(tempfile.mkdtemp(prefix="mochaos-bench-before-after-"))
    before = job(args, args.baseline.resolve(), args.baseline_python, "before", logs)
    after = job(args, ROOT, sys.executable, "after", logs)
    rows = []
    for name in sorted(set(before["tests"]) | set(after["tests"])):
        b, a = before["tests"].get(name, {}), after["tests"].get(name, {})
        rows.append([
            name,
            f"{b.get('outcome')} {','.join(b.get('failed', []))}",
            f"{a.get('outcome')} {','.join(a.get('failed', []))}",
            figures.fmt(b.get("seconds"), " s", 0), figures.fmt(a.get("seconds"), " s", 0),
            figures.fmt(figures.ratio(a.get("seconds"), b.get("seconds")), "x"),
        ])  # fmt: skip
    rows.append(["(whole job, cluster start included)", f"exit {before['exit']}",
                 f"exit {after['exit']}", figures.fmt(before["wall_s"], " s", 0),
                 figures.fmt(after["wall_s"], " s", 0),
                 figures.fmt(figures.ratio(after["wall_s"], before["wall_s"]), "x")])  # fmt: skip
    headers = ["scenario", "before", "after", "before s", "after s", "after/before"]
    print(figures.table(headers, rows))
    if args.fresh_cache:
        print(
            f"built before: {', '.join(before['built'])}\nbuilt after: {', '.join(after['built'])}"
        )
    settings = {k: str(v) for k, v in vars(args).items()}
    result = {"machine": figures.machine(), "job": settings, "before": before, "after": after,
              "logs": str(logs)}  # fmt: skip
    print(f"figures: {figures.write_figures(f'before_after_{args.job}', result, out=args.out)}")
    return 0


if __name__ == "__main__":
    figures.run(main)
