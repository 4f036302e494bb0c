"""The faults an exploration injects at a point: fault kinds of the one table, by role.

A fault names its kind (:data:`mochaos.faults.FAULTS`) and its target: a role of the
workload ("migrating set", "target pod"), ``point`` (the object the point fired for, when
its role is a rule's, e.g. a pool pod), or nothing (the operator). :func:`applicable` is the
default matrix: the operator faults at every point, plus the object faults on the point's
own object and on the named objects it referred to (or that referred to it) when it first
happened, each kind on the objects of its target kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from mochaos.errors import Inconclusive, UsageError
from mochaos.explore.abstraction import ABSENT, EXISTS
from mochaos.explore.points import Point, PointWatch
from mochaos.faults import FAULTS, FaultKind, remove_label
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
EXPLORED: dict[str, FaultKind] = {n: k for n, k in FAULTS.items() if k.explored}
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


def applicable(point: Point, kinds: tuple[str, ...]) -> list[RoleFault]:
    """The faults that apply to a point's role (the default matrix), of the given kinds:
    every kind of the point's own object's kind on it (the label's removal only when the
    pod carried one), every kind but the label's removal on the objects it is related to,
    and the operator's."""
    own = point.role if point.named else POINT_TARGET
    gone = point.attr == EXISTS and point.after == ABSENT
    targets: list[tuple[str, str]] = [] if gone else [(point.kind, own)]
    targets += [(kind, name) for kind in RELATED for name in point.related.get(kind, [])]
    faults = [
        RoleFault(name, target)
        for i, (kind, target) in enumerate(targets)
        for name, k in EXPLORED.items()
        if k.target_kind == kind
        and (k is not remove_label or (i == 0 and not gone and _labelled(point)))
    ]
    faults += [RoleFault(name) for name, k in EXPLORED.items() if k.target_kind is None]
    return [f for f in dict.fromkeys(faults) if f.kind in kinds]


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
    if kind.target_kind is None:
        params = {"pause": {"seconds": o.scaled(PAUSE_SECONDS)},
                  "kill": {"downtime": o.scaled(KILL_DOWNTIME)}}.get(kind.name, {})  # fmt: skip
        return sc.inject(kind(**params), trigger=fired)
    return sc.inject(kind(_target_name(fault, watch, roles)), trigger=fired)
