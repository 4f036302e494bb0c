"""How the interposer's Go module becomes a cached binary.

The module (``go/interposer`` in a checkout, shipped without its tests in the wheel) pins
its own dependencies (k8s.io/apimachinery, api, client-go at the local cluster's Kubernetes
version, so a machine that built the cluster has them in its module cache). The recipe
revision carries a digest of its sources: editing the interposer rebuilds it, nothing else
does.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
from pathlib import Path

from mochaos.binaries.component import Component
from mochaos.binaries.go import Runner, fresh_dir, go_build, stderr_progress
from mochaos.binaries.obtain import obtain
from mochaos.paths import go_module
from mochaos.tooling.progress_callback import Progress

NAME = "interposer"
BINARY = "interposer"
MODULE = "mochaos.local/interposer"
RECIPE = "module-v1"


def _sources(module: Path) -> list[Path]:
    """go.mod, go.sum and the program's own .go files (its tests and cmd/ tools aside)."""
    files = [module / "go.mod", module / "go.sum"]
    return files + sorted(p for p in module.glob("*.go") if not p.name.endswith("_test.go"))


def recipe(module: Path | None = None) -> str:
    """Recipe revision plus a digest of the sources."""
    digest = hashlib.sha256()
    for path in _sources(module or go_module(NAME)):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"{RECIPE}-{digest.hexdigest()[:12]}"


def component() -> Component:
    """The interposer as a cached component (its version: the recipe's digest)."""
    rev = recipe()
    return Component(NAME, rev.rsplit("-", 1)[1], (BINARY,), rev)


@functools.cache
def binary(*, progress: Progress = stderr_progress) -> Path:
    """The interposer's binary, built on first use (seconds when warm); looked up once per
    process (every operator start asks)."""
    c = component()
    obtain([c], recipes={c.name: _build}, progress=progress)
    return c.path(BINARY)


def _build(c: Component, runner: Runner) -> None:
    work = fresh_dir(c.work_dir)
    for path in _sources(go_module(NAME)):
        shutil.copyfile(path, work / path.name)
    go_build(runner, c.path(BINARY), ".", cwd=work, module=MODULE, what="(the interposer)")
