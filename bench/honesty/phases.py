"""The operator's phases read from a recorded history: how long each step of the seed race took.

Each function of :data:`PHASES` returns the durations (seconds) of one phase in one history,
from its watch events, the operator's log records and mo-chaos's own actions, so a history of
the model and one of the real manager are measured by the same code. Used by
``bench/honesty/model_pace.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mochaos.ctrl.objects import (
    CLAIMSET_LABEL,
    DELETION_COST_ANNOTATION,
    PHASE_LABEL,
    POOL_NAME_LABEL,
    labels_of,
)
from mochaos.observe.history import ActionRecord, Change, History
from mochaos.observe.vocabulary import FINALIZE_ATTEMPT

Samples = list[float]


def _phase(obj: dict) -> str | None:
    return labels_of(obj).get(PHASE_LABEL)


def _is_pool_pod(c: Change) -> bool:
    return c.kind == "Pod" and POOL_NAME_LABEL in labels_of(c.obj)


def _first_claim_t(h: History) -> float:
    return next((c.t for c in h.changes("CNClaim")), h.end)


def _idle_after_creation(h: History) -> dict[str, tuple[float, float]]:
    """Pool pod -> (ADDED time, first Idle time) for the pods that went Idle."""
    added: dict[str, float] = {}
    idle: dict[str, float] = {}
    for c in h.changes("Pod"):
        if not _is_pool_pod(c):
            continue
        if c.event == "ADDED" and _phase(c.obj) in ("Unknown", "", None):
            added.setdefault(c.name, c.t)
        if c.name in added and c.name not in idle and _phase(c.obj) == "Idle":
            idle[c.name] = c.t
    return {n: (added[n], idle[n]) for n in idle}


def pool_first(h: History) -> Samples:
    """Unknown -> Idle of the pods the pool created before the first claim existed."""
    first = _first_claim_t(h)
    return [i - a for a, i in _idle_after_creation(h).values() if a < first]


def pool_later(h: History) -> Samples:
    """Unknown -> Idle of the pods the pool created once claims existed (refills)."""
    first = _first_claim_t(h)
    return [i - a for a, i in _idle_after_creation(h).values() if a >= first]


def bind(h: History) -> Samples:
    """A claim's creation -> its status phase Bound (first time)."""
    added: dict[str, float] = {}
    out: Samples = []
    for c in h.changes("CNClaim"):
        if c.event == "ADDED":
            added.setdefault(c.name, c.t)
        elif c.name in added and (c.obj.get("status") or {}).get("phase") == "Bound":
            out.append(c.t - added.pop(c.name))
    return out


def deletion_cost(h: History) -> Samples:
    """Sessions set on a CN (our action) -> the operator publishes them as its deletion cost."""
    out: Samples = []
    for a in h.actions("set_sessions"):
        want = str(a.params.get("sessions"))
        for c in h.changes("Pod"):
            annotations = (c.obj.get("metadata") or {}).get("annotations") or {}
            if c.name == a.name and c.t > a.t and annotations.get(DELETION_COST_ANNOTATION) == want:
                out.append(c.t - a.t)
                break
    return out


@dataclass(frozen=True)
class Migration:
    """When the first migration of the history went through each of its steps."""

    requested: float
    claim: str
    source: str | None = None
    draining: float | None = None
    drained: float | None = None
    done: float | None = None


def migration(h: History) -> Migration | None:
    """The first migration request and the times its source pod drained and it completed."""
    request = next(
        (a for a in h.actions("request_migration") if a.intent and a.error is None), None
    )
    if request is None:
        return None
    source = draining = drained = done = None
    for c in h.changes():
        if c.t < request.t:
            continue
        if c.kind == "CNClaim" and c.name == request.name:
            src = ((c.obj.get("spec") or {}).get("sourcePod") or {}).get("podName")
            if src:
                source = source or src
            elif source and draining and done is None and c.event != "DELETED":
                done = c.t
        elif c.kind == "Pod" and source and c.name == source:
            if draining is None and _phase(c.obj) == "Draining":
                draining = c.t
            elif draining and drained is None and _phase(c.obj) in ("Idle", "Terminating"):
                drained = c.t
    return Migration(request.t, request.name, source, draining, drained, done)


def propagation(h: History) -> Samples:
    """Migration requested -> the source pod Draining (the operator's propagation delay)."""
    m = migration(h)
    return [m.draining - m.requested] if m and m.draining else []


def drain(h: History) -> Samples:
    """Source pod Draining -> back in the pool (Idle) or evicted."""
    m = migration(h)
    return [m.drained - m.draining] if m and m.drained and m.draining else []


def migration_done(h: History) -> Samples:
    """Source pod drained -> the claim's spec.sourcePod cleared (the migration's resync)."""
    m = migration(h)
    return [m.done - m.drained] if m and m.done and m.drained and m.done >= m.drained else []


def scale_in(h: History) -> Samples:
    """Our scale-in of a claim set (the fault) -> one of its claims marked for deletion."""
    out: Samples = []
    for a in h.actions("scale_claimset"):
        if not isinstance(a, ActionRecord) or a.in_window is None:
            continue
        for c in h.changes("CNClaim"):
            meta = c.obj.get("metadata") or {}
            if (
                c.t >= a.t
                and meta.get("deletionTimestamp")
                and (labels_of(c.obj).get(CLAIMSET_LABEL) == a.name)
            ):
                out.append(c.t - a.t)
                break
    return out


def finalize_interval(h: History) -> Samples:
    """Between two Finalize passes of one claim (its requeue while Finalize cannot finish)."""
    last: dict[str, float] = {}
    out: Samples = []
    for r in h.logs(FINALIZE_ATTEMPT):
        if r.name in last:
            out.append(r.t - last[r.name])
        last[r.name] = r.t
    return out


PHASES: dict[str, tuple[str, Callable[[History], Samples]]] = {
    "pool-first": ("pool pod Unknown → Idle, first pods", pool_first),
    "pool-later": ("pool pod Unknown → Idle, later pods", pool_later),
    "bind": ("claim created → Bound", bind),
    "deletion-cost": ("sessions set → deletion cost", deletion_cost),
    "propagation": ("migration requested → source Draining", propagation),
    "drain": ("source Draining → Idle", drain),
    "migration-done": ("source Idle → migration complete", migration_done),
    "scale-in": ("scale-in → claim deleting", scale_in),
    "finalize-interval": ("Finalize pass → next pass", finalize_interval),
}
"""Phase id -> (what it measures, how)."""
