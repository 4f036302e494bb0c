"""Where mo-chaos keeps things on disk: the binary cache and the state dir.

``MOCHAOS_CACHE`` overrides the cache root (default ``$XDG_CACHE_HOME/mochaos``
or ``~/.cache/mochaos``); built binaries live under ``bin/<component>-<version>``
so several versions can coexist. ``MOCHAOS_STATE`` overrides where clusters
and run state live (default ``<cache>/state``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


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
    """The folder of one of mo-chaos's own Go modules (``go/<name>`` in a checkout; in an
    installed wheel, the copy shipped inside the package, without its tests)."""
    checkout = Path(__file__).resolve().parents[1] / "go" / name
    return checkout if checkout.is_dir() else Path(__file__).resolve().parent / "_go" / name
