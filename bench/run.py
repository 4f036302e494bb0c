"""The benchmarks' one entry point: ``python bench/run.py <name> [args]`` (or ``python -m
bench <name> [args]``) runs ``bench/<question>/<name>.py`` with ``args``; without a name it
lists the scripts by the question each answers (bench/README.md says more of each).

The scripts share ``bench/figures.py`` (and a folder's helpers, e.g. honesty/phases.py):
both folders are put on ``sys.path`` before the script runs as ``__main__``.
"""

from __future__ import annotations

import ast
import re
import runpy
import sys
from collections.abc import Sequence
from pathlib import Path

BENCH = Path(__file__).resolve().parent

QUESTIONS = {
    "speed": "How fast is a run?",
    "honesty": "Are the verdicts right, the detections complete and the model faithful?",
    "cost": "What does the framework cost while it runs?",
    "builds": "How long do the builds and a new machine's first run take?",
    "cluster": "How fast does the local cluster start, and come back when a part dies?",
    "feasibility": "Can the kind path run on this machine, and at what price?",
}
"""Each folder of bench/ and the question its scripts answer, in the order they are listed."""


def scripts() -> dict[str, Path]:
    """Every runnable script (one with a ``__main__`` block) by name."""
    found: dict[str, Path] = {}
    for folder in QUESTIONS:
        for path in sorted((BENCH / folder).glob("*.py")):
            if 'if __name__ == "__main__":' in path.read_text(encoding="utf-8"):
                found[path.stem] = path
    return found


def summary(path: Path) -> str:
    """The first sentence of a script's docstring, without "Benchmark" and "(issue N)"."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = re.sub(r" \(issues? [^)]*\)", "", doc.split("\n\n", 1)[0].replace("\n", " "))
    return first.removeprefix("Benchmark: ")


def listing() -> str:
    """The scripts by question, one line each."""
    by_folder: dict[str, list[Path]] = {}
    for path in scripts().values():
        by_folder.setdefault(path.parent.name, []).append(path)
    lines = ["usage: python bench/run.py <name> [args]   (<name> --help: its options)", ""]
    for folder, question in QUESTIONS.items():
        lines.append(f"{folder}/ — {question}")
        for path in by_folder.get(folder, []):
            lines.append(f"  {path.stem:<20} {summary(path)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the named script with the rest of ``argv``; list the scripts without a name."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(listing(), end="")
        return 0
    found = scripts()
    path = found.get(args[0].removesuffix(".py"))
    if path is None:
        print(f"bench: no script called {args[0]!r}\n", file=sys.stderr)
        print(listing(), end="", file=sys.stderr)
        return 2
    sys.path[:0] = [str(path.parent), str(BENCH)]
    sys.argv = [str(path), *args[1:]]
    runpy.run_path(str(path), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
