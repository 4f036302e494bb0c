"""The tests' tiers, found from what a test uses (tests/conftest.py assigns them).

Every collected test gets exactly one of ``unit``, ``integration``, ``e2e``; a tier says
what a test needs, so that ``pytest tests/ -m unit`` runs in minutes before a commit
(CONTRIBUTING.md) and ``pytest tests/`` runs them all:

- ``unit``: no cluster, no Docker, no Go build, no child pytest; plain Python on hand-made
  data (histories, summaries, the stand-ins of tests/support/).
- ``integration``: needs the local cluster (a fixture of the plugin that reaches it), a
  target, a double or a Go build.
- ``e2e``: runs suites, scenarios or commands end to end in child processes (``python -m
  pytest``, ``python -m mochaos``), or checks what a user meets whole: the safety tests, the
  docs that run, the CI workflows, the built wheel.

:func:`tier_of` finds the tier of a test that carries no mark; a module-level ``pytestmark =
pytest.mark.<tier>`` (or a test's own mark) overrides it. tests/test_tiers.py fails on a test
that carries two tier marks or none.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
from pathlib import Path

import pytest

TIERS = ("unit", "integration", "e2e")

TESTS = Path(__file__).resolve().parents[1]

TIERS_SEEN = pytest.StashKey[dict[str, list[str]]]()
"""Per collected test (before ``-m`` deselects any): the tier marks it carries."""

E2E_AREAS = {
    "safety": "crashes, kills and cleanup of child runs",
    "suites": "the shipped suites run in a child pytest",
    "docs": "the docs' blocks run as a user runs them",
    "ci": "the CI workflows run",
    "packaging": "the wheel built and installed",
}
"""Test folders (under tests/) whose every test is end to end."""

INTEGRATION_FIXTURES = {
    # the plugin's (mochaos.fixtures): each reaches the cluster
    "cluster_provider",
    "cluster",
    "kube",
    "namespace",
    "operator_target",
    "operator",
    "recorder",
    "scenario",
    # the tests' own on top of them
    "model_api",
    "scene",
    "run_model",
    "mo_crds",
    "mo_double",
    "private_cluster",
    "isolated_cluster",
}
"""Fixtures whose closure reaches a cluster: a test using one is at least integration."""

CHILD_RUN = re.compile(
    r"""["']-m["'],\s*["'](?:pytest|mochaos)["']"""  # python -m pytest | mochaos <command>
    r"|\brunpytest_subprocess\("  # pytester's child pytest
    r"|\brun_pytest\(|\bpytest_command\(|\brun_child\(|\brun_suites\("  # the child-run helper
)
"""What in a test's source (or a helper of its module it uses) runs a child process end to end."""

NEEDS_BUILDS = re.compile(
    r"\bcontrol_plane\.all_built\(|\bneeds_binaries\b"  # the local cluster's binaries
    r"|\bLocalProvider\("  # a private local cluster of its own
    r"|\bdocker_or_skip\(|\bDockerEngine\(|which\(\s*[\"']docker[\"']\s*\)"  # Docker
    r"|pytest\.skip\([^)]*(?:not built|cluster build)"  # a component `cluster build` makes
    r"|\bgo_build\(|\bneeds_go\b|\bGO is None|which\(\s*[\"']go[\"']\s*\)"  # the Go toolchain
)
"""What in a test's source (or a helper of its module it uses) needs the local cluster's
binaries, a cluster of its own, Docker or a Go build: at least integration."""


def tiers_of(item: pytest.Item) -> list[str]:
    """The tier marks ``item`` carries (its own, its class's, its module's), nearest first."""
    return [m.name for m in item.iter_markers() if m.name in TIERS]


def tier_of(item: pytest.Item) -> str:
    """The tier of a test that carries no mark: the most a thing it uses needs."""
    path = Path(str(item.path)).resolve()
    area = path.relative_to(TESTS).parts[0] if path.is_relative_to(TESTS) else ""
    if area in E2E_AREAS:
        return "e2e"
    fixtures = set(getattr(item, "fixturenames", ()))
    source = _uses(item)
    if CHILD_RUN.search(source):
        return "e2e"
    if fixtures & INTEGRATION_FIXTURES or NEEDS_BUILDS.search(source):
        return "integration"
    return "unit"


def _uses(item: pytest.Item) -> str:
    """The source of the test, of its module's ``pytestmark``, of the tests' own fixtures it
    uses (its module's, the conftests'), and of every helper of its module it reaches by name
    (functions, classes, names assigned at the top)."""
    function = getattr(item, "function", None)
    if function is None:
        return ""
    module = inspect.getmodule(function)
    helpers = _module_helpers(module.__file__) if module and module.__file__ else {}
    texts = [_source(function), helpers.get("pytestmark", ""), *_own_fixtures(item)]
    seen: set[str] = {"pytestmark"}
    todo = list(texts)
    while todo:
        text = todo.pop()
        for name, body in helpers.items():
            if name not in seen and re.search(rf"\b{re.escape(name)}\b", text):
                seen.add(name)
                texts.append(body)
                todo.append(body)
    return "\n".join(texts)


def _own_fixtures(item: pytest.Item) -> list[str]:
    """The source of each fixture in the test's closure defined under tests/ (a conftest's
    reaches the helpers beside it: their source is added too)."""
    info = getattr(item, "_fixtureinfo", None)
    texts: list[str] = []
    for defs in info.name2fixturedefs.values() if info else ():
        func = getattr(defs[-1], "func", None)
        filename = inspect.getsourcefile(func) if func is not None else None
        if not filename or not Path(filename).resolve().is_relative_to(TESTS):
            continue
        texts.append(_source(func))
        if Path(filename).name == "conftest.py":
            texts.extend(_module_helpers(filename).values())
    return texts


def _source(function: object) -> str:
    try:
        return inspect.getsource(function)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return ""


@functools.cache
def _module_helpers(filename: str) -> dict[str, str]:
    """The module's top-level functions, classes and assigned names (tests excluded), by
    name: their source."""
    text = Path(filename).read_text(encoding="utf-8")
    helpers: dict[str, str] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = [] if node.name.startswith(("test_", "Test")) else [node.name]
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
        else:
            continue
        for name in names:
            helpers[name] = ast.get_source_segment(text, node) or ""
    return helpers
