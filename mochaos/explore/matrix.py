"""The faults an exploration injects at a point: fault kinds of the one table, by role.

A fault names its kind (:data:`mochaos.faults.FAULTS`) and its target: a role of the
workload ("migrating set", "target pod"), ``point`` (the object the point fired for, when
its role is a rule's, e.g. a pool pod), or nothing (the operator, the namespace's
MatrixOne). :func:`applicable` is the default matrix: the operator faults at every point,
plus the object faults on the point's own object and on the named objects it referred to (or
that referred to it) when it first happened, each kind on the objects of its target kind;
the MatrixOne faults on the components the target can make unreachable (HAKeeper and the
lock service at every point, a pod's query service with the pod's faults).
"""

from __future__ import annotations

from dataclasses import dataclass

from mochaos.errors import Inconclusive, UsageError
from mochaos.explore.abstraction import ABSENT, EXISTS
from mochaos.explore.points import Point, PointWatch
from mochaos.faults import (
    FAULTS,
    MATRIXONE,
    OBJECT,
    FaultKind,
    MatrixOneFault,
    crash_after_write,
    fail_write,
    remove_label,
    restart_stale,
)
from mochaos.observe.history import ActionRecord
from mochaos.scenario._engine import Scenario
from mochaos.scenario._gate import Fired

POINT_TARGET = "point"
"""A fault's target: the object its point fired for."""

PAUSE_SECONDS = 10.0
"""How long ``pause`` freezes the operator (operator seconds)."""
KILL_DOWNTIME = 5.0
"""How long the operator stays down after ``kill`` before it starts again, as a crashed
pod restarted by its kubelet (operator seconds)."""
RELATED = ("CNClaimSet", "CNClaim", "Pod")
"""The kinds of related objects a point's faults also target, in the matrix's order."""
HOLD_SECONDS = 10.0
"""How long ``hold-write`` holds the operator's write, and ``stale-view`` and ``unobserved``
its view of a kind, before they let go on their own, and a MatrixOne fault its component
down (operator seconds)."""
EXPLORED: dict[str, FaultKind] = {
    n: k for n, k in FAULTS.items() if k.explored and k is not restart_stale
}
"""The kinds an exploration may inject (``--faults``); restart-stale needs an earlier
version of its own choosing, no point gives one."""
VIEW = tuple(n for n, k in EXPLORED.items() if k.target_kind == OBJECT and k is not
             crash_after_write)  # fmt: skip
"""The interposer's faults on the operator's view or writes at a state point."""
"""The kinds an exploration may inject (``--faults``)."""


@dataclass(frozen=True)
class RoleFault:
    """A fault kind (a name of :data:`mochaos.faults.FAULTS`) aimed at a role, ``point``, or
    "" for the operator: what a case injects, before the role names an object."""

    kind: str
    target: str = ""

    @property
    def label(self) -> str:
        """``scale-in migrating set``, ``restart``."""
        return f"{self.kind} {self.target}" if self.target else self.kind

    @property
    def slug(self) -> str:
        """The label as a test-id part: ``scale-in.migrating-set``."""
        return self.label.replace(" ", ".", 1).replace(" ", "-")


def parse_fault_kinds(text: str | None) -> tuple[str, ...]:
    """``--faults a,b``: the kinds named (all when empty); UsageError for an unknown one."""
    if not text:
        return tuple(EXPLORED)
    kinds = tuple(k for k in text.replace(",", " ").split() if k)
    unknown = [k for k in kinds if k not in EXPLORED]
    if unknown:
        raise UsageError(
            f"unknown fault {', '.join(unknown)}", hint=f"use some of {', '.join(EXPLORED)}"
        )
    return kinds


def _offered(kind: FaultKind, matrixone: tuple[str, ...]) -> bool:
    """A MatrixOne fault is offered only when the target can make its component
    unreachable (``matrixone``); every other kind is."""
    return not isinstance(kind.apply, MatrixOneFault) or kind.apply.component in matrixone


def applicable(
    point: Point,
    kinds: tuple[str, ...],
    *,
    interposed: bool = True,
    matrixone: tuple[str, ...] = (),
) -> list[RoleFault]:
    """The faults that apply to a point's role (the default matrix), of the given kinds:
    every kind of the point's own object's kind on it (the label's removal only when the
    pod carried one), every kind but the label's removal on the objects it is related to,
    the operator's and the namespace's MatrixOne's (those whose component the target can
    make unreachable, ``matrixone``), and the interposer's on the point's object (a crash
    right after the write of a write point; a hold, a failure, a frozen or coalesced view at
    a state the operator read, see :func:`pruned`) when the learn run had an interposer
    (``interposed``)."""
    own = point.role if point.named else POINT_TARGET
    if point.is_write:
        crash = interposed and crash_after_write.name in kinds
        return [RoleFault(crash_after_write.name, own)] if crash else []
    gone = point.attr == EXISTS and point.after == ABSENT
    targets: list[tuple[str, str]] = [] if gone else [(point.kind, own)]
    targets += [(kind, name) for kind in RELATED for name in point.related.get(kind, [])]
    faults = [
        RoleFault(name, target)
        for i, (kind, target) in enumerate(targets)
        for name, k in EXPLORED.items()
        if k.target_kind == kind
        and _offered(k, matrixone)
        and (k is not remove_label or (i == 0 and not gone and _labelled(point)))
    ]
    faults += [RoleFault(name) for name, k in EXPLORED.items() if k.target_kind is None]
    faults += [
        RoleFault(name)
        for name, k in EXPLORED.items()
        if k.target_kind == MATRIXONE and _offered(k, matrixone)
    ]
    if interposed and not gone and point.read is not False:
        faults += [RoleFault(name, own) for name in VIEW]
    return [f for f in dict.fromkeys(faults) if f.kind in kinds]


def pruned(
    points: list[Point],
    kinds: tuple[str, ...],
    *,
    interposed: bool = True,
    matrixone: tuple[str, ...] = (),
) -> tuple[list[tuple[Point, RoleFault]], dict[str, int]]:
    """The (point, fault) cells of the default matrix, and how many the learn run showed to
    be pointless, as Sieve prunes: a fault on the operator's view or writes at a state it
    never read before writing (``never read``), or at a later point before the same next
    write as an earlier point, where it takes the same write or view (``covered``)."""
    cells, counts = [], {"never read": 0, "covered": 0}
    seen: set[tuple[str, str, str]] = set()
    for point in points:
        for fault in applicable(point, kinds, interposed=interposed, matrixone=matrixone):
            if fault.kind in VIEW and point.next_write:
                key = (fault.kind, point.kind, point.next_write)
                if key in seen:
                    counts["covered"] += 1
                    continue
                seen.add(key)
            cells.append((point, fault))
        if interposed and point.read is False and not point.is_write:
            counts["never read"] += sum(1 for k in VIEW if k in kinds)
    return cells, counts


def _labelled(point: Point) -> bool:
    """Whether the pod carried a claimed-by label right after the point: removing an
    absent label is a write that changes nothing (no version of its own to prove)."""
    return point.attrs.get("claimed-by", "-") != "-"


def _target_name(fault: RoleFault, watch: PointWatch, roles: dict[str, str]) -> str:
    if fault.target == POINT_TARGET:
        if watch.matched is None:
            raise Inconclusive(f"{fault.label}: the point {watch.name} named no object")
        return watch.matched
    names = [n for n, r in roles.items() if r == fault.target]
    if len(names) != 1:
        raise Inconclusive(f"{fault.label}: role {fault.target!r} names {len(names)} objects")
    return names[0]


def inject(
    sc: Scenario, fault: RoleFault, fired: Fired, watch: PointWatch, roles: dict[str, str]
) -> ActionRecord:
    """Inject one fault, gated by the point's trigger (its window is checked at the
    verdict: a write's own version, an operator fault's probe write). A write the
    apiserver refused (the object already gone) makes the case inconclusive, as in every
    scenario."""
    kind = FAULTS[fault.kind]
    o = sc.options
    if isinstance(kind.apply, MatrixOneFault):  # down for a while, then back on its own
        name = "" if kind.target_kind == MATRIXONE else _target_name(fault, watch, roles)
        return sc.inject(kind(name, seconds=o.scaled(HOLD_SECONDS)), trigger=fired)
    if kind.target_kind is None:
        params = {"pause": {"seconds": o.scaled(PAUSE_SECONDS)},
                  "kill": {"downtime": o.scaled(KILL_DOWNTIME)}}.get(kind.name, {})  # fmt: skip
        return sc.inject(kind(**params), trigger=fired)
    if kind.target_kind == OBJECT:
        point = watch.point
        name = _target_name(fault, watch, roles)
        lets_go = kind not in (fail_write, crash_after_write)  # a hold, a frozen view
        timeout = o.scaled(HOLD_SECONDS) if lets_go else None
        return sc.inject(kind(name, kind=point.kind, timeout=timeout), trigger=fired)
    return sc.inject(kind(_target_name(fault, watch, roles)), trigger=fired)


def arm(sc: Scenario, fault: RoleFault, point: Point, roles: dict[str, str]) -> ActionRecord:
    """Arm a crash right after the write of a write point, before the workload drives (no
    trigger: the write is the point)."""
    names = [n for n, r in roles.items() if r == fault.target]
    if len(names) != 1:
        raise Inconclusive(f"{fault.label}: role {fault.target!r} names {len(names)} objects")
    return sc.inject(crash_after_write(names[0], kind=point.kind, verbs=(point.before,),
                                       subresource=point.after))  # fmt: skip
