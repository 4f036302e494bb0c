"""The leases a dead component still holds, released before it is started again.

Three components of the local cluster hold leases under an identity that is new in each
process (``<hostname>_<uuid>``), so a process started after its predecessor died finds
the lease held by a holder that is gone and waits for it to expire:

- kwok-controller manages a fake node, and so its pods, only while it holds that node's
  lease in ``kube-node-lease`` (kwok v0.8.0 pkg/kwok/controllers/node_lease_controller.go
  ``sync``; identity from controller.go ``Identity``). kwokctl runs it with
  ``--node-lease-duration-seconds=200`` (kwok's 40 s times kwokctl's heartbeat factor of
  5, pkg/kwokctl/cmd/create/cluster/cluster.go ``mutationHeartbeat``), and a lease held
  by another is retried a quarter of that later: for up to four minutes no pod becomes
  Running or goes away, although every node still reads Ready.
- kube-scheduler and kube-controller-manager take their leader lease in ``kube-system``
  (client-go leaderelection, 15 s): for that long no pod is scheduled, no ReplicaSet
  or garbage collection runs.

The local cluster runs one process of each, so when one is about to start, the lease it
needs belongs to a process that is gone: deleting it lets the new process take it at its
first try. Only kwok's fake nodes exist in the cluster: every lease in
``kube-node-lease`` is one of theirs.
"""

from __future__ import annotations

from pathlib import Path

from mochaos.kube import api_client

KWOK_CONTROLLER = "kwok-controller"
HELD_BY: dict[str, tuple[str, str | None]] = {
    KWOK_CONTROLLER: ("kube-node-lease", None),  # None: every lease of the namespace
    "kube-scheduler": ("kube-system", "kube-scheduler"),
    "kube-controller-manager": ("kube-system", "kube-controller-manager"),
}
"""Component -> (namespace, lease name) of the leases it holds."""
RELEASE_WAIT = 30.0
"""Seconds the restart of a component in HELD_BY is put off while the API does not answer
(the whole cluster starting again at once); after that it starts anyway and takes its
leases over when they expire."""
USER_AGENT = "mochaos/cluster"


def release(kubeconfig: Path, component: str, *, timeout: float = 3.0) -> int:
    """Delete the leases ``component`` holds (see HELD_BY); return how many there were.
    Raises whatever the API client raises when the apiserver does not answer."""
    from kubernetes import client

    namespace, name = HELD_BY[component]
    with api_client(kubeconfig, user_agent=USER_AGENT) as api:
        leases = client.CoordinationV1Api(api)
        if name is None:
            names = [
                lease.metadata.name
                for lease in leases.list_namespaced_lease(namespace, _request_timeout=timeout).items
            ]
        else:
            names = [name]
        released = 0
        for lease in names:
            try:
                leases.delete_namespaced_lease(lease, namespace, _request_timeout=timeout)
                released += 1
            except client.ApiException as err:
                if err.status != 404:
                    raise
        return released


def try_release(kubeconfig: Path, component: str) -> int | None:
    """:func:`release`, or None when the apiserver does not answer (the component then
    takes its leases over when they expire)."""
    try:
        return release(kubeconfig, component)
    except Exception:  # unreachable or restarting apiserver: nothing to release now
        return None
