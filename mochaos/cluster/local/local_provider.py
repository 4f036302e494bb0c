"""The embedded local cluster: a real control plane from cached Go-built binaries.

``kwokctl --runtime binary`` runs etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and the kwok controller as plain processes, every one pointed at
our cached binaries (kwokctl only downloads ``http(s)://`` sources), bound to
127.0.0.1, with our kubectl first on PATH (kwokctl prefers whatever kubectl it
finds) and an apiserver audit log. kwok's fake nodes make pods schedule, go
Running, and really disappear when deleted. ``MOCHAOS_CLUSTER_NAME`` picks
another cluster than ``mochaos`` and ``MOCHAOS_APISERVER_PORT`` fixes the
apiserver's port (otherwise :mod:`mochaos.cluster.local.ports` picks a free one, as every other
component's). kwok plays the kubelet with its
default Stages plus the kubelet stand-ins of :mod:`mochaos.cluster.local.stages`. What an
operator target needs beside the control plane (kruise-manager, the MatrixOne double:
:mod:`mochaos.cluster.environment`) is started when the target asks for it
(:meth:`LocalProvider.provide`), and a supervisor (:mod:`mochaos.cluster.local.supervisor`)
restarts any component or such process that exits.
"""

from __future__ import annotations

from mochaos.cluster.local.components import Components
from mochaos.cluster.local.lifecycle import Lifecycle
from mochaos.cluster.local.provisions import Provisions


class LocalProvider(Lifecycle, Components, Provisions):
    """Starts, reuses and removes one named local cluster (see module docstring): its life
    (:mod:`~mochaos.cluster.local.lifecycle`, through kwokctl:
    :mod:`~mochaos.cluster.local.kwokctl`), its processes one by one
    (:mod:`~mochaos.cluster.local.components`) and what targets asked it to run
    (:mod:`~mochaos.cluster.local.provisions`), on one named cluster's folder and lock
    (:mod:`~mochaos.cluster.local.cluster_dir`)."""
