"""Every duration a scenario waits for the real operator and its MatrixOne: one place.

Built from the operator's own intervals (matrixone-operator 2301e3b) and the
start-up of MatrixOne pods (image pull, process start, registration with the
log service), summed per step and given a margin. The intervals are the
operator's constants; a CN's start is measured on kind; the other start-up
figures are estimates, above what the Docker trial of the operator's pods
measured (docs/matrixone-image.md: SQL on a CN ~40 s after a namespace's pods
started, on a loaded 2-core machine), since on kind scheduling, volumes and the
operator's own ordering of the sets come on top.
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
MIGRATION_DELAY = 15.0
"""pkg/controllers/cnclaim/migrate.go:31 ``propagationDelay``: the source drains this long
after the target is bound."""
DRAIN_MIN = 15.0
"""api/core/v1alpha1/cnset_types.go:153 ``GetMinDelayDuration`` (default): the least a
reclaimed CN drains (cnstore/pooling.go:62) before it may be Idle again."""
CLAIM_RESYNC = 10.0
"""pkg/controllers/cnclaim/migrate.go:33 ``migrationResyncInterval``."""
KRUISE_HELD_DRAIN = DRAIN_MIN + 3 * CNSTORE_RESYNC
"""An Idle CN the pool scaled in, drained behind OpenKruise's pre-delete hook before its slot
is given back: the minimum delay, then the store controller's resyncs until the drain is
done (44 s and 104 s measured on the local cluster, 2026-12-03). The CloneSet keeps counting
the held pod, so the pool has no new Idle pod until it is gone (docs/bugs.md, pool-churn)."""
MIN_READY = 15.0
"""pkg/controllers/common/failover.go:28 ``minReadySeconds``: a LogSet/DNSet store counts as
available only after its pod has been ready this long."""
LEASE_DURATION = 15.0
"""controller-runtime's default leader-election lease: a restarted operator may wait this long."""

# Start-up of MatrixOne and the operator: estimates.
IMAGE_PULL = 180.0
"""A node pulling a MatrixOne image (~0.5 GB) itself; ~0 when kind loaded it beforehand."""
POD_START = 10.0
"""Scheduling and container start of a pod whose image is on the node."""
MO_START = 150.0
"""A MatrixOne CN from its pod's creation to the operator marking it Idle, as measured on
kind (docs/kind.md, Figures): median ~50 s, the slowest 197 s while two scenarios started
their pools at once on 2 cores under a load average of ~40."""
LOG_SERVICE_START = 180.0
"""Three log replicas electing HAKeeper and the TN joining them (LogSet and DNSet Ready)."""
OPERATOR_START = 30.0
"""The operator's informers syncing after a (re)start, before it reconciles again."""
MARGIN = 1.5
"""Every estimate-based wait is this much longer than its sum."""


@dataclass(frozen=True, slots=True)
class Timings:
    """The waits of one real MatrixOne run; ``image_pull`` is 0 when every image was
    preloaded (kind) or nothing is pulled (the local cluster's doubles: see :func:`local`)."""

    image_pull: float = IMAGE_PULL
    margin: float = MARGIN
    mo_start: float = MO_START
    log_service_start: float = LOG_SERVICE_START

    @property
    def new_cn(self) -> float:
        """A claim beyond ``maxIdle``: the pool scales out and a new CN must start and register.

        Pool sync, CNSet -> CloneSet, pod start and pull, MatrixOne start, the
        store cache seeing it, cnstore marking it Idle, the claim's bind retry.
        """
        steps = (REQUEUE + CNSET_RESYNC + POD_START + self.image_pull + self.mo_start
                 + STORE_CACHE_REFRESH + CNSTORE_RETRY + BIND_RETRY)  # fmt: skip
        return steps * self.margin

    @property
    def pool_ready(self) -> float:
        """The pool's ``maxIdle`` pods Idle: they start in parallel (one new CN), but a bind
        of a Pending claim can make the pool scale an Idle pod in, whose replacement comes
        only after a drain held by OpenKruise (:data:`KRUISE_HELD_DRAIN`)."""
        return self.new_cn + KRUISE_HELD_DRAIN * self.margin

    @property
    def base_ready(self) -> float:
        """A namespace's LogSet and DNSet Ready (pull, start, HAKeeper election, TN; each set's
        stores count only after ``minReadySeconds``, the DNSet waits for the LogSet)."""
        steps = POD_START + self.image_pull + self.log_service_start + 2 * (MIN_READY + REQUEUE)
        return steps * self.margin + CNSET_RESYNC

    @property
    def deletion_cost(self) -> float:
        """Sessions held on a CN show as its deletion cost (one cnstore resync and query)."""
        return (CNSTORE_RESYNC + QUERY_TIMEOUT + REQUEUE) * self.margin

    @property
    def operator_restart(self) -> float:
        """A restarted operator pod Ready and leading (pod start, lease, informer sync)."""
        return (POD_START + LEASE_DURATION + OPERATOR_START) * self.margin

    @property
    def migration_phase(self) -> float:
        """A migration reaches its next phase (the source drains after the target is bound,
        at least its minimum, the claim's resync) or a store resync shows it."""
        return (MIGRATION_DELAY + DRAIN_MIN + CLAIM_RESYNC + REQUEUE) * self.margin + CNSTORE_RESYNC

    @property
    def log_line(self) -> float:
        """The operator logs an expected line (a reconcile pass, a store resync)."""
        return (REQUEUE + CNSTORE_RESYNC) * self.margin

    @property
    def teardown(self) -> float:
        """A deleted test namespace's pods go while the operator runs (a CNSet resync, pod
        start, a store retry, the image pull)."""
        return (CNSET_RESYNC + POD_START + CNSTORE_RETRY) * self.margin + self.image_pull


def local() -> Timings:
    """The real manager on the local cluster: kwok pods start at once, the MatrixOne double
    answers at once, nothing is pulled; only the operator's own intervals remain."""
    return Timings(image_pull=0.0, mo_start=0.0, log_service_start=0.0)
