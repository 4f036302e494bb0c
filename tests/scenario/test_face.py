"""The scenario's public face: the shipped suites and the docs import only from
``mochaos.scenario``; what is behind it is private to the framework; a fault verb is defined
once (the fault table); the engine holds the life cycle and forwards nothing."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import mochaos.scenario as face
from mochaos import faults
from mochaos.scenario import _engine, _predicates

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "mochaos"
SUITES = PACKAGE / "suites"
FRAMEWORK = {"mochaos.fixtures", "mochaos.explore"}
"""What may reach behind the face: the fixture that makes a scenario, exploration's runner."""


def imports(tree: ast.AST) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_the_shipped_suites_import_only_the_face():
    for path in sorted(SUITES.glob("*.py")):
        ours = {m for m in imports(ast.parse(path.read_text())) if m.startswith("mochaos")}
        assert ours <= {"mochaos.scenario"}, (path.name, ours)


def test_the_docs_scenario_blocks_import_only_the_face():
    for page in sorted((ROOT / "docs").glob("*.md")):
        for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S):
            if "scenario" not in block:
                continue
            try:
                tree = ast.parse(block)
            except SyntaxError:
                continue  # a fragment, not a module
            ours = {m for m in imports(tree) if m.startswith("mochaos.scenario.")}
            assert not ours, (page.name, ours)


def test_only_the_framework_reaches_behind_the_face():
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if module.startswith("mochaos.scenario"):
            continue
        private = {m for m in imports(ast.parse(path.read_text()))
                   if m.startswith("mochaos.scenario._")}  # fmt: skip
        if private:
            assert any(module.startswith(f) for f in FRAMEWORK), (module, private)


def test_the_face_names_every_fault_kind_and_predicate():
    kinds = {name for name, value in vars(faults).items() if isinstance(value, faults.FaultKind)}
    assert kinds == {k for k in face.__all__ if isinstance(getattr(face, k), faults.FaultKind)}
    assert {id(getattr(faults, k)) for k in kinds} == {id(k) for k in faults.FAULTS.values()}
    predicates = {n for n, f in vars(_predicates).items() if inspect.isfunction(f)
                  and f.__module__ == _predicates.__name__ and not n.startswith("_")
                  and n not in ("bound_of", "bound_pods", "all_returned")}  # fmt: skip
    assert predicates <= set(face.__all__), predicates - set(face.__all__)


def test_a_fault_verb_is_defined_once():
    """No function or method anywhere is named after a fault kind: the kind is the verb."""
    verbs = {k.action for k in faults.FAULTS.values()} | {
        name for name, value in vars(faults).items() if isinstance(value, faults.FaultKind)
    }
    defined = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name in verbs
    ]
    assert defined == []


def test_the_engine_forwards_nothing():
    for name, member in vars(_engine.Scenario).items():
        if inspect.isfunction(member) and member.__doc__:
            assert not member.__doc__.lstrip().startswith("See "), name
