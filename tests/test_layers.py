"""The layer rules of docs/architecture.md, checked on the real import graph.

Every import in mochaos/ (function-local ones too) between two units (a top-level package or
module) must go to a unit on the same floor or a lower one, the graph without the listed
exceptions must have no circle, and each listed exception must still exist (else the page
says what to delete). The page's tables are the rules: moving a unit is an edit there.
An import of a mochaos module inside a function says why it is not at the top of its
module, on its line: ``# lazy: <reason>`` (issue 25).
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mochaos"
PAGE = ROOT / "docs" / "architecture.md"
PURE = {
    "model": {"ctrl"},
    "invariants": {"bugs", "config", "ctrl", "errors", "faults", "observe"},
}
"""Units that may import only these (docs/architecture.md §3: the model stands in for the
system under test; invariants are pure functions of the history)."""


def _unit(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "mochaos":
        return None
    return parts[1] if len(parts) > 1 and parts[1] != "__version__" else "mochaos"


def _module_of(path: Path, package: Path = PACKAGE) -> str:
    rel = path.relative_to(package)
    return ".".join(("mochaos", *rel.with_suffix("").parts)).removesuffix(".__init__")


def _imported(node: ast.Import | ast.ImportFrom, module: str, path: Path) -> list[str]:
    """The modules an import statement in ``module`` (file ``path``) names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = module.split(".")
    if node.level:
        base = base[: len(base) - node.level + (path.name == "__init__.py")]
        name = ".".join([*base, *([node.module] if node.module else [])])
    else:
        name = node.module or ""
    return [name] + ([f"{name}.{a.name}" for a in node.names] if name == "mochaos" else [])


@functools.cache
def import_graph(package: Path = PACKAGE) -> dict[str, dict[str, list[str]]]:
    """unit -> imported unit -> the files that import it (every import statement)."""
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(package.rglob("*.py")):
        src = path.relative_to(package).parts[0].removesuffix(".py")
        module = _module_of(path, package)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for name in _imported(node, module, path):
                unit = _unit(name)
                if unit and unit not in (src, "mochaos"):
                    graph[src][unit].append(str(path.relative_to(ROOT)))
    return graph


LAZY = re.compile(r"#\s*lazy: +\w")
"""The comment a function-local import of a mochaos module carries: ``# lazy: <reason>``."""


def local_imports(package: Path = PACKAGE) -> dict[str, str]:
    """file:line -> its first line, for every import of a mochaos module in a function body
    (the first line of a parenthesised import is the one that says why)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        module, text = _module_of(path, package), path.read_text()
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text, str(path))):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom) and any(
                    _unit(name) for name in _imported(node, module, path)
                ):
                    found[f"{path.relative_to(ROOT)}:{node.lineno}"] = lines[node.lineno - 1]
    return found


def module_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the mochaos modules it imports (function-local imports too). ``from pkg
    import sub`` names the submodule ``pkg.sub``; ``from pkg import name`` the package."""
    paths = {_module_of(p, package): p for p in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                (base,) = _imported(node, module, path)[:1]
                deps |= {f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base
                         for a in node.names}  # fmt: skip
        graph[module] = {d for d in deps if d in paths and d != module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[str]:
    """Each circle of ``graph`` found by a depth-first walk, as ``a -> b -> a``."""
    state: dict[str, int] = {}
    found = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                found.append(" -> ".join([*path[path.index(dep) :], dep]))
            elif dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def _units(package: Path = PACKAGE) -> set[str]:
    found = {p.name for p in package.iterdir() if p.is_dir() and p.name != "__pycache__"}
    return found | {p.stem for p in package.glob("*.py") if p.stem != "__init__"}


def _table(marker: str) -> list[list[str]]:
    text = PAGE.read_text()
    block = text.split(f"<!-- {marker} -->\n", 1)[1].split("\n\n", 1)[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines()[2:]]


def floors() -> dict[str, int]:
    """unit -> floor number, from the page's layer table."""
    found = {}
    for floor, _, units in _table("layers"):
        for unit in re.findall(r"`([\w.]+)`", units):
            found[unit.removeprefix("mochaos/").removesuffix("/").removesuffix(".py")] = int(floor)
    return found


def exceptions() -> set[tuple[str, str]]:
    """The imports the page lists as known violations, to be removed."""
    found = set()
    for row in _table("layer exceptions"):
        src, dst = re.findall(r"`(\w+)`", row[0])
        found.add((src, dst))
    return found


def test_every_unit_has_a_floor():
    assert _units() - set(floors()) == set(), "place it in docs/architecture.md's layer table"
    assert set(floors()) - _units() == set(), "the layer table names a unit that is gone"


def test_imports_go_down_or_sideways():
    floor, allowed = floors(), exceptions()
    up = [
        f"{src} (floor {floor[src]}) imports {dst} (floor {floor[dst]}) in {files[0]}"
        for src, deps in import_graph().items()
        for dst, files in deps.items()
        if floor[dst] > floor[src] and (src, dst) not in allowed
    ]
    assert up == [], up


def test_no_circle_outside_the_listed_exceptions():
    allowed = exceptions()
    graph = {s: {d for d in deps if (s, d) not in allowed} for s, deps in import_graph().items()}
    assert circles(graph) == []


def test_no_module_imports_itself_round_a_circle():
    """Between modules too, function-local imports included: no import, lazy or not, hides
    a cycle (a ``# lazy:`` import is a matter of load time, never of import order)."""
    assert circles(module_graph()) == []


def test_listed_exceptions_still_exist():
    graph = import_graph()
    gone = [f"{s} -> {d}" for s, d in sorted(exceptions()) if d not in graph.get(s, {})]
    assert gone == [], f"no longer imported: delete {gone} from docs/architecture.md"


def test_the_model_and_the_invariants_import_only_what_they_may():
    graph = import_graph()
    for unit, may in PURE.items():
        assert set(graph.get(unit, {})) <= may, (unit, sorted(set(graph[unit]) - may))


def test_function_local_imports_say_why():
    """A mochaos module is imported at the top of its module, unless that would load
    something heavy where the load must stay light (the plugin, which every pytest run
    loads; the command line's start-up): then the import says so."""
    bare = [f"{where}: {line.strip()}" for where, line in local_imports().items()
            if not LAZY.search(line)]  # fmt: skip
    assert bare == [], f"move to the top, or say why on the line (# lazy: <reason>): {bare}"
