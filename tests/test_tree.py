"""The tests mirror the package tree, and no two test modules share a basename (pytest's
rootdir-relative imports would otherwise mix them up, and a reader could not tell them apart)."""

from __future__ import annotations

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
}
"""Test folders that mirror no unit of mochaos/, and what they test instead."""


def _units() -> set[str]:
    package = ROOT / "mochaos"
    found = {p.name for p in package.iterdir() if p.is_dir() and p.name != "__pycache__"}
    return found | {p.stem for p in package.glob("*.py")}


def test_no_two_test_modules_share_a_basename():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert [n for n, count in names.items() if count > 1] == []


def test_each_test_folder_mirrors_a_unit_or_says_what_it_tests():
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders - _units() - set(ACROSS) == set()
    assert set(ACROSS) <= folders


def test_top_level_test_modules_mirror_top_level_modules():
    modules = {p.stem.removeprefix("test_") for p in TESTS.glob("test_*.py")}
    assert modules - _units() - {"layers", "tree"} == set()
