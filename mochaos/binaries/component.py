"""A cached group of binaries: where it lives, its stamp, whether the cache holds it.

A component's folder is ``<cache>/bin/<name>-<version>``; its stamp (written last) holds the
fingerprint of how it was obtained, a Go build's (name, version, recipe revision, Go version)
or a download's (:func:`mochaos.binaries.download.fingerprint`). A changed recipe revision
or Go version makes the cached copy stale, and only that.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mochaos.binaries import download
from mochaos.binaries.go import Runner, go_version
from mochaos.paths import cache_dir


@dataclass(frozen=True)
class Component:
    """One cached group of binaries (and other files) built by one recipe."""

    name: str
    version: str
    binaries: tuple[str, ...]
    recipe: str
    files: tuple[str, ...] = ()
    """Other outputs in the same folder (manifests read from the module), checked like the
    binaries."""

    @property
    def directory(self) -> Path:
        """Where this component's binaries are cached."""
        return cache_dir() / "bin" / f"{self.name}-{self.version}"

    @property
    def work_dir(self) -> Path:
        """The scratch folder its recipe builds in (a wrapper module, kept for the log)."""
        return cache_dir() / "build" / f"{self.name}-{self.version}"

    def path(self, binary: str) -> Path:
        """Path of one cached binary."""
        return self.directory / binary

    @property
    def stamp(self) -> Path:
        """Written last: its presence means every binary is complete."""
        return self.directory / ".complete"

    def is_built(self) -> bool:
        """True when every binary exists and the stamp matches how they were obtained."""
        return self.obtained_by() is not None

    def obtained_by(self) -> str | None:
        """The recipe of the cached binaries (this build's or a download's), None when stale."""
        outputs = (*self.binaries, *self.files)
        if not self.stamp.is_file() or not all(self.path(b).is_file() for b in outputs):
            return None
        stamped = self.stamp.read_text().split()[:1]
        if stamped == [download.fingerprint(self)]:
            return download.RECIPE
        return self.recipe if stamped == [self.fingerprint()] else None

    def fingerprint(self) -> str:
        """Identifies the inputs: component, version, recipe revision, Go version."""
        raw = f"{self.name}@{self.version}/{self.recipe}/{go_version()}"
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


Recipe = Callable[[Component, Runner], None]
"""Builds one component's binaries into its cache directory."""
