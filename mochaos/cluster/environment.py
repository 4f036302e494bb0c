"""What operator targets need beside the control plane, as processes of the local cluster.

A target declares an :class:`Environment`; the local provider runs what it
names (:meth:`~mochaos.cluster.local.local_provider.LocalProvider.provide`) and remembers it in the
cluster's folder, so that a kept cluster brings the same processes back. A cluster started
for the reference model runs neither, and nothing is built for it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from mochaos.doubles import DoubleSpec, matrixone


@dataclass(frozen=True)
class Environment:
    """What an operator target needs on the local cluster besides the control plane."""

    kruise: str | None = None
    """The OpenKruise version whose kruise-manager must run (None: no workload controller)."""
    matrixone: bool = False
    """Whether the MatrixOne double must run (HAKeeper, lock service, CN query services)."""

    def describe(self) -> str:
        """``kruise-manager v1.4.0, the MatrixOne double`` / ``nothing``, for messages."""
        parts = [f"kruise-manager {self.kruise}"] if self.kruise else []
        parts += ["the MatrixOne double"] if self.matrixone else []
        return ", ".join(parts) or "nothing"


FILE = "environment.json"
"""In the cluster's folder: the environment provided so far."""


def parts(env: Environment) -> tuple[DoubleSpec, ...]:
    """The processes of ``env`` in start order: kruise-manager first (it makes the pods the
    operator's workloads ask for), then the MatrixOne double (it registers stores for them)."""
    from mochaos.kruise import manager  # lazy: plugin load (via operator.target); Go builds

    out = [manager.spec(env.kruise)] if env.kruise else []
    return (*out, *([matrixone.SPEC] if env.matrixone else []))


def build(env: Environment) -> None:
    """Put what ``env`` runs into the binary cache (each under its own build lock, so that a
    cold build does not hold the cluster's lock for minutes)."""
    from mochaos.doubles.matrixone import (  # lazy: plugin load (via operator.target); Go builds
        build as matrixone_build,
    )
    from mochaos.kruise import kruise_build  # lazy: plugin load (via operator.target); Go builds

    if env.kruise:
        kruise_build.kruise_manager(env.kruise)
    if env.matrixone:
        matrixone_build.binary()


def merged(current: Environment, wanted: Environment) -> Environment:
    """What runs once ``wanted`` is provided on a cluster running ``current``: both, with
    ``wanted``'s kruise version (one kruise-manager per cluster)."""
    return Environment(
        kruise=wanted.kruise or current.kruise, matrixone=current.matrixone or wanted.matrixone
    )


def read(cluster_dir: Path) -> Environment:
    """The environment recorded for a cluster (nothing when none was provided)."""
    try:
        data = json.loads((cluster_dir / FILE).read_text())
    except (OSError, ValueError):
        return Environment()
    return Environment(kruise=data.get("kruise") or None, matrixone=bool(data.get("matrixone")))


def write(cluster_dir: Path, env: Environment) -> None:
    """Record ``env`` as the cluster's environment."""
    cluster_dir.mkdir(parents=True, exist_ok=True)
    data = {"kruise": env.kruise, "matrixone": env.matrixone}
    (cluster_dir / FILE).write_text(json.dumps(data) + "\n")
