"""A Debian minbase root file system as an image layer, made with debootstrap and cached.

``debootstrap --variant=minbase --include=<packages> <suite>`` from a Debian mirror
(``MOCHAOS_DEBIAN_MIRROR``, default deb.debian.org), then apt's downloaded packages and
lists, documentation, manuals and translations are removed, and the tree becomes one
layer tarball without ``/dev``, ``/proc`` and ``/sys`` entries (the runtime provides
those). debootstrap needs root: without it, one line says so and what else works.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mochaos.errors import UsageError
from mochaos.images.archive import tar_directory
from mochaos.images.recipe import Entry, Steps, fingerprint

MIRROR_ENV = "MOCHAOS_DEBIAN_MIRROR"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
REVISION = "minbase-v1"
DEBOOTSTRAP_TIMEOUT = 1800.0
TRIMMED = (
    "var/cache/apt/archives",
    "var/lib/apt/lists",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/locale",
    "usr/share/info",
)
"""Directories whose content an image does not need (emptied, kept)."""
EXCLUDED = ("./dev/*", "./proc/*", "./sys/*")


def mirror() -> str:
    """The Debian mirror debootstrap reads."""
    return os.environ.get(MIRROR_ENV) or DEFAULT_MIRROR


@dataclass(frozen=True, slots=True)
class DebianBase:
    """A minbase of ``suite`` with ``packages`` added."""

    suite: str
    packages: tuple[str, ...]

    def inputs(self) -> dict[str, Any]:
        """Everything that decides the layer's content (its cache key)."""
        return {
            "revision": REVISION,
            "suite": self.suite,
            "packages": sorted(self.packages),
            "mirror": mirror(),
            "trimmed": list(TRIMMED),
        }

    def entry(self) -> Entry:
        """The cache entry of this base."""
        return Entry(f"debian-{self.suite}", "minbase", fingerprint(self.inputs()))

    def debootstrap_argv(self, target: Path) -> list[str]:
        """The debootstrap command that makes the tree at ``target``."""
        include = ",".join(sorted(self.packages))
        return [
            "debootstrap",
            "--variant=minbase",
            f"--include={include}",
            self.suite,
            str(target),
            mirror(),
        ]

    def layer(self, steps: Steps, *, needed_by: str) -> Path:
        """The layer tarball (built in one step of ``steps`` when not cached)."""
        entry = self.entry()
        out = entry.directory / "layer.tar"
        name = f"Debian {self.suite} minbase + {', '.join(sorted(self.packages))}"
        with steps.step(name, log_path=entry.log_path), entry.building() as needed:
            if needed:
                self._build(entry, out, needed_by=needed_by)
        return out

    def _build(self, entry: Entry, out: Path, *, needed_by: str) -> None:
        if shutil.which("debootstrap") is None:
            raise UsageError(
                f"debootstrap not found: it makes the Debian base of {needed_by}",
                hint="apt-get install debootstrap, or load the image into Docker yourself",
            )
        if os.geteuid() != 0:
            raise UsageError(
                f"debootstrap needs root to make the Debian base of {needed_by}",
                hint="run the build as root once (the result is cached), or load the image "
                "into Docker yourself",
            )
        runner = entry.runner()
        tree = entry.directory / "rootfs"
        try:
            runner(
                self.debootstrap_argv(tree),
                what=f"debootstrap {self.suite}",
                timeout=DEBOOTSTRAP_TIMEOUT,
                hint=f"check that {mirror()} is reachable ({MIRROR_ENV} names another)",
            )
            for rel in TRIMMED:
                _empty(tree / rel)
            tar_directory(tree, out, runner=runner, exclude=EXCLUDED)
        finally:
            shutil.rmtree(tree, ignore_errors=True)


def _empty(directory: Path) -> None:
    """Remove what ``directory`` holds (apt's ``partial/`` and ``lock`` included)."""
    if not directory.is_dir():
        return
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
