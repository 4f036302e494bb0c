"""Cluster providers: ``local`` (embedded control plane), ``kind``, ``existing``.

Each provider (:class:`ClusterProvider`) turns options into a running
:class:`mochaos.kube.Cluster`;
nothing here knows about claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from mochaos.cluster.existing.existing_provider import ExistingProvider
from mochaos.config import PROVIDERS
from mochaos.errors import UsageError
from mochaos.kube import Cluster

__all__ = ["PROVIDERS", "ClusterProvider", "make_provider"]


class ClusterProvider(Protocol):
    """Starts, reuses and removes clusters of one kind (local, kind, existing)."""

    name: str

    def up(self) -> Cluster:
        """Start the cluster, or reuse a healthy one of the same name."""
        ...

    def down(self) -> None:
        """Stop the cluster and remove what ``up`` created."""
        ...

    def load_image(self, ref: str) -> None:
        """Make a container image available to the cluster's nodes."""
        ...

    def audit_log(self) -> Path | None:
        """Path of the apiserver audit log, where the provider has one."""
        ...


def make_provider(
    name: str,
    *,
    kubeconfig: Path | None = None,
    context: str | None = None,
    allow_contexts: Sequence[str] = (),
    keep_cluster: bool = False,
    registry: str | None = None,
) -> ClusterProvider:
    """The provider called ``name``, configured from the command-line options."""
    if name == "local":
        from mochaos.cluster.local.local_provider import (  # lazy: cli, plugin load it; heavy
            LocalProvider,
        )

        return LocalProvider()
    if name == "kind":
        from mochaos.cluster.kind.kind_provider import (  # lazy: cli, plugin load it; heavy
            KindProvider,
        )

        return KindProvider(keep_cluster=keep_cluster, registry=registry)
    if name == "existing":
        return ExistingProvider(
            kubeconfig=kubeconfig, context=context, allow_contexts=allow_contexts
        )
    raise UsageError(
        f"unknown cluster provider {name!r}", hint=f"use one of: {', '.join(PROVIDERS)}"
    )
