"""Cluster providers: ``local`` (embedded control plane), ``kind``, ``existing``.

Each provider turns options into a running :class:`mochaos.types.Cluster`;
nothing here knows about claims.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mochaos.errors import UsageError
from mochaos.types import ClusterProvider

PROVIDERS = ("local", "kind", "existing")


def make_provider(
    name: str,
    *,
    kubeconfig: Path | None = None,
    context: str | None = None,
    allow_contexts: Sequence[str] = (),
    keep_cluster: bool = False,
) -> ClusterProvider:
    """The provider called ``name``, configured from the command-line options."""
    if name == "local":
        from mochaos.cluster.local import LocalProvider

        return LocalProvider()
    if name == "kind":
        from mochaos.cluster.kind import KindProvider

        return KindProvider(keep_cluster=keep_cluster)
    if name == "existing":
        from mochaos.cluster.existing import ExistingProvider

        return ExistingProvider(
            kubeconfig=kubeconfig, context=context, allow_contexts=allow_contexts
        )
    raise UsageError(
        f"unknown cluster provider {name!r}", hint=f"use one of: {', '.join(PROVIDERS)}"
    )
