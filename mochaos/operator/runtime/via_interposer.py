"""An operator's way to the apiserver: through an interposer of its own, or direct.

On the local cluster every target's operator (the model, a manager binary or checkout, an
image's container on the host network) talks to the apiserver through an interposer started
for it (``--mochaos-interposer on``, the default), so that a scenario can hold or fail its
writes and steer what its watches deliver (mochaos.interpose); nothing else of mo-chaos does.
The interposer lives as long as the operator's namespace: a restart of the operator keeps it
and its rules.
"""

from __future__ import annotations

from pathlib import Path

from mochaos.interpose.proxy import Interposer
from mochaos.kube import Cluster


def interposed(provider: str, mode: str) -> bool:
    """Whether an operator on a cluster of ``provider`` (``--mochaos-cluster``) talks to the
    apiserver through an interposer, with ``--mochaos-interposer`` ``mode``: the one rule
    for the operator's way (the ``interposer`` marker skips by it)."""
    return mode == "on" and provider == "local"


def interposer_for(cluster: Cluster, folder: Path, *, mode: str) -> Interposer | None:
    """A started interposer in ``folder`` for one operator on ``cluster``, or None when the
    operator talks to the apiserver directly (:func:`interposed`: mode off, or not the local
    cluster)."""
    if not interposed(cluster.provider, mode):
        return None
    return Interposer(
        folder / "interposer", upstream_kubeconfig=Path(cluster.kubeconfig),
        context=cluster.context,
    ).start()  # fmt: skip
