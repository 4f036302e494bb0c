"""Which CloneSet pods go first on scale-in: kruise's ActivePodsWithRanks ordering
(cloneset/utils/pod_sorter.go:56-118 at v1.4.0) with its same-node ranker (:176-200).

Earlier in the order means deleted first:
1. unscheduled before scheduled; 2. Pending < Unknown < Running; 3. not available before
available, then not ready before ready; 4. lower ``controller.kubernetes.io/pod-deletion-cost``
first; 5. higher same-node rank first (the extra pods of a crowded node); 6. of two ready
pods, the one ready for less time first; 7. more container restarts first; 8. newer first.
A template with topologySpreadConstraints makes kruise use its spread-constraint ranker
instead; the double keeps the same-node ranker (the operator sets spread constraints only
for ``topologyEvenSpread``, which mo-chaos topologies do not use).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import cmp_to_key

from mochaos.doubles.kruise import keys
from mochaos.doubles.kruise.api import Obj
from mochaos.doubles.kruise.objects import (
    annotations_of,
    is_ready,
    labels_of,
    parse_time,
    ready_since,
    uid_of,
)

_PHASE_ORDER = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_cost(pod: Obj) -> int:
    """getDeletionCostFromPodAnnotations: the int32 annotation, 0 when absent or invalid
    (a leading ``+`` or leading zeros are invalid)."""
    raw = annotations_of(pod).get(keys.POD_DELETION_COST)
    if raw is None or not raw:
        return 0
    if not (raw[0] == "-" or raw == "0" or raw[0] in "123456789"):
        return 0
    try:
        value = int(raw)
    except ValueError:
        return 0
    return value if -(2**31) <= value < 2**31 else 0


def _node(pod: Obj) -> str:
    return (pod.get("spec") or {}).get("nodeName") or ""


def _max_restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return max((s.get("restartCount", 0) for s in statuses), default=0)


def _after_or_zero(t1: datetime | None, t2: datetime | None) -> bool:
    """t1 after t2, a zero (None) time counting as after any other."""
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _cmp(
    a: Obj,
    b: Obj,
    ranks: dict[str, float],
    available: Callable[[Obj], bool] | None,
    *,
    cost: bool = True,
) -> int:
    """-1 when ``a`` sorts before ``b``, 1 when after, 0 when equal; without ``cost`` (and
    ranks and ``available``) this is k8s' ActivePods order."""

    def less(x: bool) -> int:
        return -1 if x else 1

    if _node(a) != _node(b) and (not _node(a) or not _node(b)):
        return less(not _node(a))
    pa = _PHASE_ORDER.get((a.get("status") or {}).get("phase", ""), 0)
    pb = _PHASE_ORDER.get((b.get("status") or {}).get("phase", ""), 0)
    if pa != pb:
        return less(pa < pb)
    if available is not None and available(a) != available(b):
        return less(not available(a))
    if is_ready(a) != is_ready(b):
        return less(not is_ready(a))
    ca, cb = (deletion_cost(a), deletion_cost(b)) if cost else (0, 0)
    if ca != cb:
        return less(ca < cb)
    ra, rb = ranks.get(uid_of(a), 0.0), ranks.get(uid_of(b), 0.0)
    if ra != rb:
        return less(ra > rb)
    if is_ready(a) and is_ready(b):
        ta, tb = ready_since(a), ready_since(b)
        if ta != tb:
            return less(_after_or_zero(ta, tb))
    if _max_restarts(a) != _max_restarts(b):
        return less(_max_restarts(a) > _max_restarts(b))
    created_a = parse_time((a.get("metadata") or {}).get("creationTimestamp"))
    created_b = parse_time((b.get("metadata") or {}).get("creationTimestamp"))
    if created_a != created_b:
        return less(_after_or_zero(created_a, created_b))
    return 0


def same_node_ranks(pods: list[Obj]) -> dict[str, float]:
    """NewSameNodeRanker: on a node with several of the pods, all but the most active one
    get a rank (the least active the highest)."""
    by_node: dict[str, list[Obj]] = {}
    for pod in pods:
        if _node(pod):
            by_node.setdefault(_node(pod), []).append(pod)
    ranks: dict[str, float] = {}
    for crowd in by_node.values():
        if len(crowd) <= 1:
            continue
        ordered = sorted(crowd, key=cmp_to_key(lambda x, y: _cmp(x, y, {}, None)))[:-1]
        for i, pod in enumerate(ordered):
            ranks[uid_of(pod)] = float(len(ordered) - i)
    return ranks


def scale_in_order(pods: list[Obj], available: Callable[[Obj], bool]) -> list[Obj]:
    """``pods`` sorted first-to-delete first (ActivePodsWithRanks with the same-node
    ranker and ``available`` as AvailableFunc)."""
    ranks = same_node_ranks(pods)
    return sorted(pods, key=cmp_to_key(lambda x, y: _cmp(x, y, ranks, available)))


def update_order(pods: list[Obj]) -> list[Obj]:
    """The order CloneSet pods are updated in (GetPodsSortFunc, k8s ActivePods: unscheduled,
    pending, not ready, ready for less time, more restarts, newer first), then the ones
    already in PreparingUpdate first (cloneset_update.go SortUpdateIndexes)."""
    ordered = sorted(pods, key=cmp_to_key(lambda x, y: _cmp(x, y, {}, None, cost=False)))
    return sorted(
        ordered, key=lambda p: labels_of(p).get(keys.LIFECYCLE_STATE) != keys.PREPARING_UPDATE
    )
