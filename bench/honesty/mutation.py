"""Mutation testing of the invariants (issue 16): do their tests kill changed judgements?

Copies the package and the tests into a scratch folder, runs mutmut (``pip install -e
'.[mutation]'``) over ``mochaos/invariants/`` with ``tests/invariants/`` as the tests,
and prints per module how many mutants were killed, survived, or are listed as
equivalent (``bench/honesty/mutation_equivalent.json``: mutant -> why no test can tell it
apart). The score is killed / (all - equivalent). Not part of CI: a run takes minutes.
See docs/mutation-testing.md. Run: ``python bench/run.py mutation --help``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

import figures

from mochaos.errors import InfraError, UsageError
from mochaos.report.rundir import new_run_id

MUTATED = "mochaos/invariants"
TESTS = "tests/invariants"
EQUIVALENT = Path(__file__).with_name("mutation_equivalent.json")
DETECTED = frozenset({"killed", "timeout", "suspicious", "segfault", "caught by type check"})
"""mutmut outcomes where the tests noticed the mutant."""
SURVIVED = frozenset({"survived", "no tests"})
TIMEOUT_MULTIPLIER = 2.0
"""mutmut stops a mutant's tests after (their baseline seconds + 1) x this x 2 CPU seconds, half
that in wall time. Its default, 15, let a mutant that loops for ever (``self.first = 1`` for
``+= 1`` in single-binding's verdict: 71 s of tests) hold a worker for 18 minutes; 2 still
leaves each run four times its baseline's CPU."""
CONFIG = f"""
[tool.mutmut]
source_paths = ["mochaos/"]
only_mutate = ["{MUTATED}/*"]
pytest_add_cli_args_test_selection = ["{TESTS}/"]
pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x"]
timeout_multiplier = {TIMEOUT_MULTIPLIER}
"""
_LINE = re.compile(r"^\s*(?P<name>\S+): (?P<status>.+?)\s*$")


def prepare(work: Path) -> None:
    """A scratch copy of the package, the tests and pyproject.toml with mutmut's settings."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    repo = figures.REPO
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(repo / "mochaos", work / "mochaos", ignore=ignore)
    shutil.copytree(repo / "tests", work / "tests", ignore=ignore)
    pyproject = (repo / "pyproject.toml").read_text(encoding="utf-8")
    (work / "pyproject.toml").write_text(pyproject + CONFIG, encoding="utf-8")


def mutmut(work: Path, *args: str, log: Path | None = None) -> str:
    """Run ``mutmut <args>`` in ``work`` with this interpreter; its output (or the log's)."""
    if shutil.which("mutmut", path=str(Path(sys.executable).parent)) is None:
        raise UsageError("mutmut is not installed", hint="pip install -e '.[mutation]'")
    command = [str(Path(sys.executable).parent / "mutmut"), *args]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if log is None:
        done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
        output = done.stdout
    else:
        with log.open("w", encoding="utf-8") as fh:
            done = subprocess.run(command, cwd=work, env=env, stdout=fh, stderr=subprocess.STDOUT)
        output = log.read_text(encoding="utf-8", errors="replace")
    if done.returncode != 0:
        tail = output.strip().splitlines()[-1:] or ["(no output)"]
        raise InfraError(f"mutmut {args[0]} failed ({done.returncode}): {tail[0]}")
    return output


def parse_results(text: str) -> dict[str, str]:
    """mutant name -> outcome, from ``mutmut results --all true``."""
    results = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match and "__mutmut_" in match["name"]:
            results[match["name"]] = match["status"]
    return results


def module_of(name: str) -> str:
    """``retry_budget`` for ``mochaos.invariants.retry_budget.x…__mutmut_3``; the package's
    own ``__init__`` for names right under it."""
    parts = name.split(".")
    return parts[2] if len(parts) > 3 else "__init__"


def score(results: dict[str, str], equivalent: dict[str, str]) -> dict[str, dict[str, int]]:
    """Per module (and ``all``): total, killed, survived, equivalent, other."""
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for name, status in results.items():
        for key in (module_of(name), "all"):
            row = table[key]
            row["total"] += 1
            if status in DETECTED:
                row["killed"] += 1
            elif name in equivalent:
                row["equivalent"] += 1
            elif status in SURVIVED:
                row["survived"] += 1
            else:
                row["other"] += 1
    return {key: dict(row) for key, row in sorted(table.items())}


def percent(row: dict[str, int]) -> float | None:
    """Killed over the mutants that are not equivalent, in percent."""
    return figures.ratio(100.0 * row.get("killed", 0), row["total"] - row.get("equivalent", 0))


def _parser() -> figures.Parser:
    p = figures.Parser(prog="python bench/run.py mutation", description=__doc__.splitlines()[0])
    p.add_argument("--work", type=Path, default=None, help="scratch folder (default under --out)")
    p.add_argument("--max-children", type=int, default=2, help="mutants tested at once")
    p.add_argument("--show", action="store_true", help="print the diff of every survivor")
    p.add_argument(
        "--no-run", action="store_true", help="score the results already in --work again"
    )
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT, help="figures folder")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run mutmut, print the table and the survivors, write the figures."""
    args = _parser().parse_args(argv)
    run_id = new_run_id()
    work = args.work or args.out / f"mutation-{run_id}"
    equivalent: dict[str, str] = json.loads(EQUIVALENT.read_text(encoding="utf-8"))
    if args.no_run:
        if args.work is None or not (work / "mutants").is_dir():
            raise UsageError(
                "--no-run needs the --work folder of an earlier run", hint="e.g. --work /tmp/m"
            )
    else:
        prepare(work)
        print(f"bench: mutating {MUTATED} in {work} (log: {work}/mutmut.log)", file=sys.stderr)
        mutmut(work, "run", "--max-children", str(args.max_children), log=work / "mutmut.log")
    results = parse_results(mutmut(work, "results", "--all", "true"))
    if not results:
        raise InfraError("mutmut reported no mutants", hint=f"see {work}/mutmut.log")
    table = score(results, equivalent)
    f = figures.fmt
    print(
        figures.table(
            ["module", "mutants", "killed", "survived", "equivalent", "score"],
            [
                [
                    key,
                    str(row["total"]),
                    str(row.get("killed", 0)),
                    str(row.get("survived", 0) + row.get("other", 0)),
                    str(row.get("equivalent", 0)),
                    f(percent(row), " %", 1),
                ]
                for key, row in table.items()
            ],
        )
    )
    survivors = sorted(n for n, s in results.items() if s not in DETECTED and n not in equivalent)
    stale = sorted(n for n in equivalent if results.get(n) not in SURVIVED)
    for name in survivors:
        print(f"survived: {name} ({results[name]})")
        if args.show:
            print(mutmut(work, "show", name))
    for name in stale:
        print(f"listed as equivalent but {results.get(name, 'not generated')}: {name}")
    result = {
        "benchmark": "mutation",
        "tool": mutmut(work, "--version").strip(),
        "mutated": MUTATED,
        "tests": TESTS,
        "machine": figures.machine(),
        "table": table,
        "score_percent": percent(table["all"]),
        "survivors": survivors,
        "stale_equivalents": stale,
    }
    print(f"figures: {figures.write_figures('mutation', result, out=args.out, run_id=run_id)}")
    return 0


if __name__ == "__main__":
    figures.run(main)
