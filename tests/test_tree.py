"""The tests mirror the package tree, and no two test modules share a basename (pytest's
rootdir-relative imports would otherwise mix them up, and a reader could not tell them apart);
no two modules of the package share one either (a name says what a module is, wherever it
stands), but for Python's own: ``__init__.py`` and ``__main__.py``."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
ACROSS = {
    "ci": "the operator's CI workflows of docs/ci/, linted and run",
    "docs": "the runnable blocks of docs/",
    "lab": "the lab's experiments beside the package (lab/: the trial of the operator's pods)",
    "packaging": "the built wheel",
    "safety": "crashes, kills and cleanup across the units",
    "support": "no tests: the builders and stand-ins the tests share (as support.<module>)",
}
"""Test folders that mirror no unit of mochaos/, and what they test instead."""


PYTHON_NAMES = {"__init__.py", "__main__.py"}
"""Basenames Python gives a meaning to (a package; ``python -m``): they stand in many folders."""


def _units() -> set[str]:
    package = ROOT / "mochaos"
    found = {p.name for p in package.iterdir() if p.is_dir() and p.name != "__pycache__"}
    return found | {p.stem for p in package.glob("*.py")}


def test_no_two_test_modules_share_a_basename():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert [n for n, count in names.items() if count > 1] == []


def test_no_two_package_modules_share_a_basename():
    names = Counter(p.name for p in (ROOT / "mochaos").rglob("*.py"))
    twice = {n: count for n, count in names.items() if count > 1 and n not in PYTHON_NAMES}
    assert twice == {}, "rename the less central one to say what it is"


def test_each_test_folder_mirrors_a_unit_or_says_what_it_tests():
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders - _units() - set(ACROSS) == set()
    assert set(ACROSS) <= folders


def test_top_level_test_modules_mirror_top_level_modules():
    modules = {p.stem.removeprefix("test_") for p in TESTS.glob("test_*.py")}
    assert modules - _units() - {"layers", "tree", "tiers"} == set()


def test_support_holds_helpers_and_no_tests():
    support = TESTS / "support"
    assert sorted(p.name for p in support.rglob("test_*.py")) == []
    assert (support / "__init__.py").is_file()


def _imported(path: Path) -> set[str]:
    """The top-level names of the absolute imports of ``path``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_tests_share_helpers_through_support_only():
    """A helper is imported as ``support.<module>``, or relatively within its own folder:
    never by a test folder's name, which is a unit's name (``from invariants.builders``
    reads as the product's ``mochaos.invariants``)."""
    folders = {p.name for p in TESTS.iterdir() if p.is_dir()} - {"support", "__pycache__"}
    crossing = {
        str(path.relative_to(ROOT)): sorted(_imported(path) & folders)
        for path in [*TESTS.rglob("*.py"), *(ROOT / "bench").rglob("*.py")]
        if _imported(path) & folders
    }
    assert crossing == {}
