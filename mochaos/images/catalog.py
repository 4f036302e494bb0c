"""Which images mo-chaos can build itself, and how, by image reference.

A provider that must put an image on its nodes asks :func:`builder_for` when the
engine lacks it: images a target made from its own input (the operator built
from a checkout) are registered by that target and are always built; the
upstream images the scenario needs (OpenKruise's manager, MatrixOne, MinIO) are
pulled when a registry serves them and built from their Go modules otherwise (MinIO's
container is started by :class:`mochaos.matrixone.storage.DockerMinio`, which gets
its own image).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from mochaos.images.matrixone import ensure_image
from mochaos.images.operator_images import kruise_image
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.progress_callback import Progress

Build = Callable[[DockerCli, Progress], None]
"""Puts the image into the engine the CLI talks to."""


@dataclass(frozen=True)
class Builder:
    """How to get one image into the engine when it is not there."""

    build: Build
    pull_first: bool
    """True for upstream images (a registry may serve them); False for our own builds."""
    what: str


_REGISTERED: dict[str, Builder] = {}


def register(ref: str, builder: Builder) -> None:
    """Name how ``ref`` is built (a target's own image, e.g. the operator from a checkout)."""
    _REGISTERED[ref] = builder


def _kruise(ref: str) -> Builder | None:
    m = re.fullmatch(r"(?:docker\.io/)?openkruise/kruise-manager:(v\d+\.\d+\.\d+)", ref)
    if m is None:
        return None
    version = m.group(1)

    def build(docker: DockerCli, progress: Progress) -> None:
        kruise_image(version, docker=docker, progress=progress)

    return Builder(build, pull_first=True, what=f"OpenKruise's manager {version} from its module")


def _matrixone(ref: str) -> Builder | None:
    m = re.fullmatch(r"(?:docker\.io/)?matrixorigin/matrixone:v?(\d+\.\d+\.\d+)", ref)
    if m is None:
        return None
    version = m.group(1)

    def build(docker: DockerCli, progress: Progress) -> None:
        ensure_image(version, docker, progress=progress)

    # ensure_image pulls first itself, and refuses in one line a version it cannot build.
    return Builder(build, pull_first=False, what=f"MatrixOne {version} from its module")


RULES: tuple[Callable[[str], Builder | None], ...] = (_kruise, _matrixone)
"""Upstream images recognised by reference, tried in order."""


def builder_for(ref: str) -> Builder | None:
    """How ``ref`` can be built here (None: only a registry can serve it)."""
    if ref in _REGISTERED:
        return _REGISTERED[ref]
    for rule in RULES:
        found = rule(ref)
        if found is not None:
            return found
    return None
