"""How the MatrixOne double's Go module becomes a binary for a given MatrixOne version.

The module (the repository's ``go/matrixone-double/``, carried by the wheel: found by
:func:`mochaos.paths.go_module`) pins the MatrixOne version the operator's main branch
pins. For that version it builds from its own go.mod/go.sum; for another it is rewritten
to require that version with the replace lines of that version's own go.mod (MatrixOne's
forks of goetty, dragonboat, …), then tidied. :func:`binary` runs the steps through
:mod:`mochaos.binaries` and caches the binary.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

from mochaos.binaries.component import Component
from mochaos.binaries.go import (
    Runner,
    fresh_dir,
    go,
    go_build,
    module_gomod,
    stderr_progress,
)
from mochaos.binaries.obtain import obtain
from mochaos.paths import go_module
from mochaos.tooling.gomod import replace_lines
from mochaos.tooling.progress_callback import Progress

GO_MODULE = go_module("matrixone-double")
MO_MODULE = "github.com/matrixorigin/matrixone"
BINARY = "matrixone-double"
RECIPE = "module-v1"
# The checksum database does not know MatrixOne's forks (github.com/matrixorigin/*).
NOSUMDB = "github.com/matrixorigin"

_REQUIRE = re.compile(rf"^\s*(?:require\s+)?{re.escape(MO_MODULE)}\s+(\S+)", re.M)


def build_env() -> dict[str, str]:
    """Environment additions for go commands on the module."""
    current = os.environ.get("GONOSUMDB", "")
    parts = [p for p in current.split(",") if p]
    if NOSUMDB not in parts:
        parts.append(NOSUMDB)
    return {"GONOSUMDB": ",".join(parts)}


def pinned_version() -> str:
    """The MatrixOne version the module's go.mod requires (the default build)."""
    m = _REQUIRE.search((GO_MODULE / "go.mod").read_text())
    if m is None:
        raise RuntimeError(f"{GO_MODULE / 'go.mod'} does not require {MO_MODULE}")
    return m.group(1)


def _sources() -> list[Path]:
    files = [GO_MODULE / "go.mod", GO_MODULE / "go.sum"]
    files += sorted(p for p in GO_MODULE.glob("*.go") if not p.name.endswith("_test.go"))
    return files


def recipe() -> str:
    """Recipe revision plus a digest of the sources: editing the double rebuilds it."""
    digest = hashlib.sha256()
    for path in _sources():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{RECIPE}-{digest.hexdigest()[:12]}"


def prepare_module(work: Path, version: str, mo_gomod: str | None) -> list[list[str]]:
    """Copy the module into ``work`` for ``version``; return the go commands still to run.

    ``mo_gomod`` is that MatrixOne version's go.mod text, needed unless ``version`` is
    the pinned one.
    """
    for path in _sources():
        shutil.copyfile(path, work / path.name)
    if version == pinned_version():
        return []
    if mo_gomod is None:
        raise ValueError(f"MatrixOne {version} needs its go.mod to build the double")
    ours = (GO_MODULE / "go.mod").read_text()
    header = [ln for ln in ours.splitlines() if ln.startswith(("module ", "go "))]
    lines = [*header, "", f"require {MO_MODULE} {version}", "", *replace_lines(mo_gomod)]
    (work / "go.mod").write_text("\n".join(lines) + "\n")
    (work / "go.sum").unlink(missing_ok=True)
    return [["mod", "tidy"]]


def component(version: str | None = None) -> Component:
    """The double built against MatrixOne ``version`` (default: the pinned one)."""
    return Component("matrixone-double", version or pinned_version(), (BINARY,), recipe())


def binary(version: str | None = None, *, progress: Progress = stderr_progress) -> Path:
    """The double's binary for MatrixOne ``version`` (default: the pinned one), built on
    first use (seconds when warm, about 2 min cold)."""
    c = component(version)
    obtain([c], recipes={c.name: _build}, progress=progress)
    return c.path(BINARY)


def _build(c: Component, runner: Runner) -> None:
    work = fresh_dir(c.work_dir)
    module = f"{MO_MODULE}@{c.version}"
    mo_gomod = None
    if c.version != pinned_version():
        mo_gomod = module_gomod(runner, module, work)
    for args in prepare_module(work, c.version, mo_gomod):
        runner.progress(f"  resolving {module}")
        runner.run([go(), *args], cwd=work, label="go mod", module=module, env=build_env())
    go_build(
        runner, c.path(BINARY), ".", cwd=work, module=module,
        what=f"(MatrixOne {c.version})", env=build_env(),
    )  # fmt: skip
