"""Pod churn: pool pods marked for deletion without ever having served.

A pool pod *serves* once its pool phase label says Idle, Bound or Draining, or a claim
labelled it ``claimed-by``. It is *marked* the first time it shows the pool's
``Terminating`` phase, OpenKruise's ``PreparingDelete`` state, a deletionTimestamp, or
goes (DELETED). A pod marked before it ever served is churn: it was created (an image
pulled, a CN started and registered with HAKeeper) for nothing. Pods mo-chaos itself
acted on (a fault that deleted or killed the pod) are not the operator's churn.

Only pods with the pool's ``pool-name`` label count: MatrixOne's log and TN pods, and CN
pods of a set outside any pool, are not the pool's to churn.

A churned pod is *explained* by the bind of a claim that was Pending when the pod appeared
at about the same time (within ``explain_within`` seconds either side, by default
config.CHURN_EXPLAIN_WITHIN): the real pool counts
such a claim twice for a moment — its pod is labelled Bound before its status says so — and
scales out by one pod, which it then scales in (matrixone-operator ``cnpool/controller.go
:113-125`` with ``cnclaim/controller.go:206, 220-253``). Each such bind explains one pod. The
no-pod-churn invariant judges the pods killed soon after they appeared that no bind explains;
the timeline shows all of them as one condensed row; the result counts them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mochaos.config import CHURN_EXPLAIN_WITHIN
from mochaos.ctrl.finalizers import PREPARING_DELETE
from mochaos.ctrl.objects import (
    CLAIMED_BY_LABEL,
    KRUISE_STATE_LABEL,
    PHASE_LABEL,
    POOL_NAME_LABEL,
    claim_phase,
    deleting,
    labels_of,
)
from mochaos.observe.history import ActionRecord, Change, Entry

SERVING_PHASES = frozenset({"Idle", "Bound", "Draining"})
POD = "Pod"
CLAIM = "CNClaim"


@dataclass(frozen=True, slots=True)
class Churned:
    """One pool pod marked for deletion before it ever served."""

    pod: str
    pool: str
    created: float
    """When the history first showed the pod."""
    marked: float
    how: str
    """What marked it: ``phase Terminating``, ``PreparingDelete``, ``deletionTimestamp``
    or ``deleted``."""
    seq: int
    explained_by: str = ""
    """The claim whose bind from Pending explains the pod (see the module docstring)."""

    @property
    def life(self) -> float:
        """Seconds from the pod's first appearance to its marking."""
        return self.marked - self.created


def marking(change: Change, obj: dict) -> str | None:
    """What in ``change`` marks the pod for deletion (see :class:`Churned`), or None."""
    if change.event == "DELETED":
        return "deleted"
    if deleting(obj):
        return "deletionTimestamp"
    labels = labels_of(obj)
    if labels.get(PHASE_LABEL) == "Terminating":
        return "phase Terminating"
    if labels.get(KRUISE_STATE_LABEL) == PREPARING_DELETE:
        return PREPARING_DELETE
    return None


def serving(obj: dict) -> bool:
    """Whether the pod, as ``obj`` shows it, serves (or served) a claim or the idle pool."""
    labels = labels_of(obj)
    return labels.get(PHASE_LABEL) in SERVING_PHASES or bool(labels.get(CLAIMED_BY_LABEL))


class ChurnTracker:
    """Follows pod and claim changes in history order and reports each churned pod once."""

    def __init__(self, *, explain_within: float = CHURN_EXPLAIN_WITHIN) -> None:
        self.explain_within = explain_within
        self._first: dict[str, float] = {}
        self._served: set[str] = set()
        self._settled: set[str] = set()
        self._ours: set[str] = set()
        self._phase: dict[str, str] = {}
        self._binds: list[tuple[float, str]] = []
        """Binds of claims that were Pending, not yet used to explain a pod: (t, claim)."""
        self.churned: list[Churned] = []

    def see(self, entry: Entry) -> Churned | None:
        """Fold one entry in; the churn it reveals, if any."""
        if isinstance(entry, ActionRecord):
            if entry.kind == POD:
                self._ours.add(entry.name)
            return None
        if isinstance(entry, Change) and entry.kind == CLAIM:
            self._see_claim(entry)
            return None
        if not isinstance(entry, Change) or entry.kind != POD or entry.name in self._settled:
            return None
        obj = entry.obj
        pool = labels_of(obj).get(POOL_NAME_LABEL)
        if not pool:
            return None
        name = entry.name
        self._first.setdefault(name, entry.t)
        if serving(obj):
            self._served.add(name)
        how = marking(entry, obj)
        if how is None:
            return None
        self._settled.add(name)
        if name in self._served or name in self._ours:
            return None
        created = self._first[name]
        churn = Churned(name, pool, created, entry.t, how, entry.seq, self._explain(created))
        self.churned.append(churn)
        return churn

    def _see_claim(self, change: Change) -> None:
        phase = "" if change.event == "DELETED" else claim_phase(change.obj)
        if self._phase.get(change.name) == "Pending" and phase == "Bound":
            self._binds.append((change.t, change.name))
        self._phase[change.name] = phase

    def _explain(self, created: float) -> str:
        """The claim whose Pending bind explains a pod that appeared at ``created`` (used
        up), or ''."""
        for i, (t, claim) in enumerate(self._binds):
            if abs(created - t) <= self.explain_within:
                del self._binds[i]
                return claim
        return ""


def churned_pods(
    entries: Iterable[Entry], *, explain_within: float = CHURN_EXPLAIN_WITHIN
) -> list[Churned]:
    """Every churned pod of a history, in the order they were marked."""
    tracker = ChurnTracker(explain_within=explain_within)
    for entry in entries:
        tracker.see(entry)
    return tracker.churned
