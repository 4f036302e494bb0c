"""Environment doubles: stand-ins for the parts of a real MatrixOne deployment that cannot
run on the embedded cluster, each named as a double and written from the source it doubles.

- ``matrixone``: MatrixOne's control plane as the operator sees it over morpc (HAKeeper,
  the TN's lock service, each CN's query service), one MatrixOne cluster per namespace.

A double is a long-running process the local provider starts after the control plane is
ready, when an operator target needs it, and supervises like the control plane's own
components. Each double module exposes a :class:`DoubleSpec`. The same spec describes a real
process run the same way (OpenKruise's kruise-manager, :mod:`mochaos.kruise.manager`,
``kind="component"``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DoubleContext:
    """What a double needs to know about the cluster it serves."""

    cluster_name: str
    kubeconfig: Path
    state_dir: Path
    """The double's own folder under the cluster's state (created before start)."""
    log_path: Path
    """Where the double's stdout/stderr go (the provider opens it)."""


@dataclass(frozen=True)
class DoubleSpec:
    """How to run and probe one double (or one real process run like a double)."""

    name: str
    description: str
    command: Callable[[DoubleContext], list[str]]
    """The argv that starts the double in the foreground (it must not daemonise)."""
    health: Callable[[DoubleContext], str | None]
    """None when the running double is healthy, else one line saying what is wrong."""
    prepare: Callable[[DoubleContext], None] | None = None
    """Run once before the first start (build a binary, install CRDs); may raise."""
    env: Callable[[DoubleContext], dict[str, str]] | None = None
    """Environment variables the process needs besides mo-chaos's own."""
    kind: str = "double"
    """``double`` (a stand-in) or ``component`` (the real program), for status and messages."""


def state_dir(cluster_state: Path, name: str) -> Path:
    """Where the double called ``name`` keeps its files in a local cluster's state folder."""
    return cluster_state / "doubles" / name
