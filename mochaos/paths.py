"""Where mo-chaos keeps things on disk: the binary cache and the state dir.

``MOCHAOS_CACHE`` overrides the cache root (default ``$XDG_CACHE_HOME/mochaos``
or ``~/.cache/mochaos``); built binaries live under ``bin/<component>-<version>``
so several versions can coexist. ``MOCHAOS_STATE`` overrides where clusters
and run state live (default ``<cache>/state``). The Go modules mo-chaos builds from its own
sources live in the repository's ``go/`` folder; a wheel carries them inside the package
(:func:`go_module`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
SHIPPED_GO = PACKAGE / "_go"
"""Where a wheel carries the Go modules of the repository's ``go/`` (sources, go.mod and
go.sum; no ``_test.go``): the build hook of setup.py copies them there."""
CHECKOUT_GO = PACKAGE.parent / "go"
"""The Go modules in a checkout, beside the package (a source tree, an editable install)."""


def cache_dir() -> Path:
    """Root of mo-chaos's cache (binaries, CRDs, build logs)."""
    env = os.environ.get("MOCHAOS_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "mochaos"


def state_dir() -> Path:
    """Root of runtime state: local clusters, pid files, crash-reaper records."""
    env = os.environ.get("MOCHAOS_STATE")
    return Path(env).expanduser() if env else cache_dir() / "state"


def machine_lock(name: str) -> Path:
    """A lock file every mo-chaos on this machine shares, whatever its cache or state
    folder: for what is machine-wide, such as the ports kwokctl picks (in the system's
    temporary folder)."""
    return Path(tempfile.gettempdir()) / f"mochaos-{name}.lock"


def machine_file(name: str) -> Path:
    """A file every mo-chaos on this machine shares (beside :func:`machine_lock`'s), such as
    the list of kwok work folders whose clusters hold ports."""
    return Path(tempfile.gettempdir()) / f"mochaos-{name}"


def go_module(name: str) -> Path:
    """The folder of mo-chaos's Go module ``name`` (``go/<name>`` in the repository): the
    copy an installed wheel carries when there is one, else the checkout's."""
    shipped = SHIPPED_GO / name
    return shipped if shipped.is_dir() else CHECKOUT_GO / name
