"""Every duration the kind path waits for a real operator and a real MatrixOne: one place.

Built from the operator's own intervals (matrixone-operator 2301e3b) and the
start-up of MatrixOne pods (image pull, process start, registration with the
log service), summed per step and given a margin. The intervals are the
operator's constants; the start-up figures are estimates, not measurements
(no kind cluster has run on our build machines).
"""

from __future__ import annotations

from dataclasses import dataclass

# The operator's intervals, in seconds.
REQUEUE = 2.0
"""matrixorigin/controller-runtime pkg/reconciler/reconciler.go:60 ``defaultRequeueAfter``."""
CNSET_RESYNC = 10.0
"""pkg/controllers/cnset/controller.go:49 ``reSyncAfter`` while a CNSet is not ready."""
STORE_CACHE_REFRESH = 15.0
"""pkg/mocli/manager.go:36 ``RefreshInterval`` of the HAKeeper store cache (new CNs)."""
CNSTORE_RETRY = 5.0
"""pkg/controllers/cnstore/controller.go:67 ``retryInterval`` (Unknown -> Idle, drains)."""
CNSTORE_RESYNC = 30.0
"""pkg/controllers/cnstore/controller.go:68 ``resyncInterval``: sessions -> deletion cost."""
QUERY_TIMEOUT = 10.0
"""pkg/querycli/query.go:28: the query-service call that reads a CN's sessions."""
BIND_RETRY = 5.0
"""pkg/controllers/cnclaim/controller.go:48 ``retryBindInterval`` while no pod is Idle."""
LEASE_DURATION = 15.0
"""controller-runtime's default leader-election lease: a restarted operator may wait this long."""

# Start-up of MatrixOne and the operator: estimates.
IMAGE_PULL = 180.0
"""A node pulling a MatrixOne image (~0.5 GB) itself; ~0 when kind loaded it beforehand."""
POD_START = 10.0
"""Scheduling and container start of a pod whose image is on the node."""
MO_START = 90.0
"""A MatrixOne process from container start to registering with the log service."""
LOG_SERVICE_START = 180.0
"""Three log replicas electing HAKeeper and the TN joining them (LogSet and DNSet Ready)."""
OPERATOR_START = 30.0
"""The operator's informers syncing after a (re)start, before it reconciles again."""
MARGIN = 1.5
"""Every estimate-based wait is this much longer than its sum."""


@dataclass(frozen=True, slots=True)
class Waits:
    """The waits of one kind run; ``image_pull`` is 0 when every image was preloaded."""

    image_pull: float = IMAGE_PULL
    margin: float = MARGIN

    @property
    def new_cn(self) -> float:
        """A claim beyond ``maxIdle``: the pool scales out and a new CN must start and register.

        Pool sync, CNSet -> CloneSet, pod start and pull, MatrixOne start, the
        store cache seeing it, cnstore marking it Idle, the claim's bind retry.
        """
        steps = (REQUEUE + CNSET_RESYNC + POD_START + self.image_pull + MO_START
                 + STORE_CACHE_REFRESH + CNSTORE_RETRY + BIND_RETRY)  # fmt: skip
        return steps * self.margin

    @property
    def pool_ready(self) -> float:
        """A new pool's first ``maxIdle`` pods Idle (they start in parallel: one new CN)."""
        return self.new_cn

    @property
    def base_ready(self) -> float:
        """A namespace's LogSet and DNSet Ready (pull, start, HAKeeper election, TN)."""
        return (POD_START + self.image_pull + LOG_SERVICE_START) * self.margin

    @property
    def deletion_cost(self) -> float:
        """Sessions held on a CN show as its deletion cost (one cnstore resync and query)."""
        return (CNSTORE_RESYNC + QUERY_TIMEOUT + REQUEUE) * self.margin

    @property
    def operator_restart(self) -> float:
        """A restarted operator pod Ready and leading (pod start, lease, informer sync)."""
        return (POD_START + LEASE_DURATION + OPERATOR_START) * self.margin
