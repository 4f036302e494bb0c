"""The MatrixOne double: MatrixOne's control plane as the operator reaches it over morpc.

One Go process per local cluster (the repository's ``go/matrixone-double/``, built by
:func:`.build.binary` when a target needs it) runs, for every namespace with a LogSet, a
real MatrixOne HAKeeper on its own loopback address, a CN store per Running CN pod and a
TN store per Running DN pod, the TN's lock service and each CN's query service. See
README.md in this folder. :data:`SPEC` is its :class:`~mochaos.doubles.DoubleSpec`;
:mod:`.client` is the control client scenarios use.
"""

from __future__ import annotations

import zlib

from mochaos.doubles import DoubleContext, DoubleSpec
from mochaos.doubles.matrixone.client import ControlClient
from mochaos.errors import InfraError

NAME = "matrixone"


def address_pool(cluster_name: str) -> str:
    """The loopback /16 this cluster's namespaces get addresses from.

    Spread by cluster name so the doubles of two local clusters rarely probe the same
    addresses; the double still skips any address whose ports are taken.
    """
    second = 100 + zlib.crc32(cluster_name.encode()) % 100
    return f"127.{second}.0.0/16"


def command(ctx: DoubleContext) -> list[str]:
    """The argv of the double for ``ctx`` (foreground; SIGTERM stops it cleanly)."""
    from mochaos.doubles.matrixone import build  # lazy: plugin load (via environment); Go builds

    binary = build.component().path(build.BINARY)
    return [
        str(binary),
        "--kubeconfig",
        str(ctx.kubeconfig),
        "--state-dir",
        str(ctx.state_dir),
        "--address-pool",
        address_pool(ctx.cluster_name),
    ]


def health(ctx: DoubleContext) -> str | None:
    """None when the running double answers its health check, else why not (one line)."""
    try:
        return ControlClient.from_state_dir(ctx.state_dir).health_problem()
    except InfraError as err:
        return str(err)


def prepare(ctx: DoubleContext) -> None:
    """Build the double's binary (cached; seconds when warm, about 2 min cold)."""
    from mochaos.doubles.matrixone import build  # lazy: plugin load (via environment); Go builds

    build.binary()


SPEC = DoubleSpec(
    name=NAME,
    description="MatrixOne HAKeeper, TN lock service and CN query services (morpc)",
    command=command,
    health=health,
    prepare=prepare,
)
