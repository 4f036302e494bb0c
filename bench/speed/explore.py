"""Benchmark (issue 23): an exploration's throughput — cases per hour and its costs.

Runs ``python -m mochaos explore`` with the arguments given after ``--`` (or reads an
exploration.json written earlier with ``--from``) and reports, from the file: the learn
run's seconds, the point extraction's milliseconds, the points and cases, the matrix
batch's wall time, cases per hour, and the concurrency ratio (the cases' own durations
summed over the batch's wall time). Real-manager runs must hold the port-9443 lock, e.g.
``flock /work/locks/port9443.lock .venv/bin/python bench/run.py explore -- --operator
source:<checkout>@2301e3b --workload migration --budget 12 -n 3``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from figures import DEFAULT_OUT, Parser, fmt, machine, run, table, write_figures

from mochaos.errors import InfraError

ROOT = Path(__file__).resolve().parents[2]


def explore(args: Sequence[str], out: Path) -> Path:
    """Run the explore command into ``out``; the exploration.json it wrote."""
    cmd = [sys.executable, "-m", "mochaos", "explore", "--reports-dir", str(out), *args]
    print(f"bench: $ {' '.join(cmd[2:])}", file=sys.stderr, flush=True)
    subprocess.run(cmd, cwd=ROOT, check=False)
    found = sorted(out.glob("explore-*/exploration.json"))
    if not found:
        raise InfraError("explore wrote no exploration.json", hint=f"see its output in {out}")
    return found[-1]


def figures_of(exploration: dict[str, Any]) -> dict[str, Any]:
    """The figures of the last invocation recorded in an exploration file."""
    last = exploration["history"][-1]
    matrix = next((b for b in last.get("batches", []) if b["what"] == "matrix"), None)
    learn = exploration["learn"]
    wall = matrix["seconds"] if matrix else None
    runs = matrix["runs"] if matrix else 0
    case_seconds = matrix.get("case_seconds") if matrix else None
    return {
        "target": exploration["target"],
        "workload": exploration["workload"],
        "time_scale": exploration["time_scale"],
        "learn_seconds": learn.get("seconds"),
        "extract_ms": round(learn.get("extract_seconds", 0) * 1000, 1),
        "points": len(exploration["points"]),
        "cases": len(exploration["cases"]) - 1,
        "matrix_runs": runs,
        "matrix_workers": matrix["workers"] if matrix else None,
        "matrix_seconds": wall,
        "cases_per_hour": round(runs / wall * 3600, 1) if wall else None,
        "mean_case_seconds": round(case_seconds / runs, 1) if case_seconds and runs else None,
        "concurrency": round(case_seconds / wall, 2) if case_seconds and wall else None,
        "signatures": [s["signature"] for s in exploration["signatures"]],
        "machine": machine(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, print the table, write the figures."""
    p = Parser(prog="python bench/run.py explore", description=__doc__.splitlines()[0])
    p.add_argument("--from", dest="source", type=Path, help="an exploration.json to read")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the figures go")
    p.add_argument("explore_args", nargs="*", help="arguments of `mochaos explore` (after --)")
    args = p.parse_args(argv)
    if args.source is None:
        with tempfile.TemporaryDirectory(prefix="mochaos-bench-explore-") as tmp:
            data = json.loads(explore(args.explore_args, Path(tmp)).read_text())
    else:
        data = json.loads(args.source.read_text())
    f = figures_of(data)
    rows = [
        ["learn run", fmt(f["learn_seconds"], " s", 1)],
        ["point extraction", fmt(f["extract_ms"], " ms", 1)],
        ["points / cases", f"{f['points']} / {f['cases']}"],
        ["matrix runs (workers)", f"{f['matrix_runs']} ({f['matrix_workers']})"],
        ["matrix wall time", fmt(f["matrix_seconds"], " s", 0)],
        ["cases per hour", fmt(f["cases_per_hour"], "", 1)],
        ["mean case", fmt(f["mean_case_seconds"], " s", 1)],
        ["concurrency (sum of cases / wall)", fmt(f["concurrency"])],
    ]
    print(table(["figure", f"{f['target']['operator']} {f['workload']}"], rows))
    print(f"bench: figures {write_figures('explore', f, out=args.out)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run(main)
