"""The ``local`` provider: a real control plane on this machine, kwok's fake nodes, and what
operator targets need beside it, supervised.

:class:`~mochaos.cluster.local.local_provider.LocalProvider` is the provider; its parts:
``base`` (one named cluster's folder, lock and settings), ``lifecycle`` (up, recover,
create, down) through ``kwokctl``, ``components`` (each process: pids, health, stop and
start), ``provisions`` (what targets asked it to run: the environment's doubles), and
what they stand on: ``ports`` (chosen machine-wide), ``stages`` (kwok's Stages and the
kubelet stand-ins), ``supervisor`` (restarts what exits), ``processes`` (how a process ran,
to run it again), ``leases`` (released before a restart), ``doubles_host`` (a double's
folder, start, health), ``attached`` (what must stop with the cluster), ``in_use`` (who
uses it).
"""
