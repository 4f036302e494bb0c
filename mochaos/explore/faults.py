"""The faults an exploration injects at a point: existing nemesis actions, by role.

A fault names what it does and its target: a role of the workload ("migrating set",
"target pod"), ``point`` (the object the point fired for, when its role is a rule's, e.g.
a pool pod), or nothing (the operator). :func:`applicable` is the default matrix: the
operator faults at every point, plus the object faults on the point's own object and on
the named objects it referred to (or that referred to it) when it first happened.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from mochaos.ctrl.objects import CLAIMED_BY_LABEL
from mochaos.errors import Inconclusive, UsageError
from mochaos.explore.abstraction import ABSENT, EXISTS
from mochaos.explore.points import Point, PointWatch
from mochaos.observe.history import ActionRecord, State
from mochaos.scenario.actions import Fired
from mochaos.scenario.engine import Scenario

POINT_TARGET = "point"
"""A fault's target: the object its point fired for."""

PAUSE_SECONDS = 10.0
"""How long ``pause`` freezes the operator (operator seconds)."""
KILL_DOWNTIME = 5.0
"""How long the operator stays down after ``kill`` before it starts again, as a crashed
pod restarted by its kubelet (operator seconds)."""


@dataclass(frozen=True)
class FaultKind:
    """One kind of fault: its name, the kind of object it targets (None: the operator)."""

    name: str
    target_kind: str | None
    summary: str


FAULTS: dict[str, FaultKind] = {
    f.name: f
    for f in (
        FaultKind("scale-in", "CNClaimSet", "the claim set's replicas lowered by one"),
        FaultKind("scale-out", "CNClaimSet", "the claim set's replicas raised by one"),
        FaultKind("delete-claim", "CNClaim", "the claim deleted"),
        FaultKind("delete-pod", "Pod", "the pod deleted"),
        FaultKind("remove-label", "Pod", f"the pod's {CLAIMED_BY_LABEL} label removed"),
        FaultKind("restart", None, "the operator stopped and started again (a fresh list)"),
        FaultKind("kill", None, f"the operator killed, started again {KILL_DOWNTIME:.0f} s later"),
        FaultKind("pause", None, f"the operator frozen for {PAUSE_SECONDS:.0f} s"),
    )
}  # fmt: skip


@dataclass(frozen=True)
class Fault:
    """A fault kind and its target (a role, ``point``, or "" for the operator)."""

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
        return tuple(FAULTS)
    kinds = tuple(k for k in text.replace(",", " ").split() if k)
    unknown = [k for k in kinds if k not in FAULTS]
    if unknown:
        raise UsageError(
            f"unknown fault {', '.join(unknown)}", hint=f"use some of {', '.join(FAULTS)}"
        )
    return kinds


def applicable(point: Point, kinds: tuple[str, ...]) -> list[Fault]:
    """The faults that apply to a point's role (the default matrix), of the given kinds."""
    own = point.role if point.named else POINT_TARGET
    gone = point.attr == EXISTS and point.after == ABSENT
    faults: list[Fault] = []
    if not gone:
        if point.kind == "CNClaimSet":
            faults += [Fault("scale-in", own), Fault("scale-out", own)]
        elif point.kind == "CNClaim":
            faults.append(Fault("delete-claim", own))
        elif point.kind == "Pod":
            faults.append(Fault("delete-pod", own))
            if _labelled(point):
                faults.append(Fault("remove-label", own))
    for claimset in point.related.get("CNClaimSet", []):
        faults += [Fault("scale-in", claimset), Fault("scale-out", claimset)]
    for claim in point.related.get("CNClaim", []):
        faults.append(Fault("delete-claim", claim))
    for pod in point.related.get("Pod", []):
        faults.append(Fault("delete-pod", pod))
    faults += [Fault(name) for name, f in FAULTS.items() if f.target_kind is None]
    return [f for f in dict.fromkeys(faults) if f.kind in kinds]


def _labelled(point: Point) -> bool:
    """Whether the pod carried a claimed-by label right after the point: removing an
    absent label is a write that changes nothing (no version of its own to prove)."""
    return point.attrs.get("claimed-by", "-") != "-"


def _target_name(fault: Fault, watch: PointWatch, roles: dict[str, str]) -> str:
    if fault.target == POINT_TARGET:
        if watch.matched is None:
            raise Inconclusive(f"{fault.label}: the point {watch.name} named no object")
        return watch.matched
    names = [n for n, r in roles.items() if r == fault.target]
    if len(names) != 1:
        raise Inconclusive(f"{fault.label}: role {fault.target!r} names {len(names)} objects")
    return names[0]


def _replicas(state: State, claimset: str) -> int:
    obj = state.get("CNClaimSet", claimset)
    if obj is None:
        raise Inconclusive(f"claim set {claimset} is gone")
    return int((obj.get("spec") or {}).get("replicas") or 0)


def inject(
    sc: Scenario, fault: Fault, fired: Fired, watch: PointWatch, roles: dict[str, str]
) -> ActionRecord:
    """Inject one fault, gated by the point's trigger (its window is checked at the
    verdict: a write's own version, an operator fault's probe write). A write the
    apiserver refused (the object already gone) makes the case inconclusive."""
    record = _apply(sc, fault, fired, watch, roles)
    if record.error:
        raise Inconclusive(f"{fault.label} at {watch.name} did not land: {record.error}")
    return record


def _apply(
    sc: Scenario, fault: Fault, fired: Fired, watch: PointWatch, roles: dict[str, str]
) -> ActionRecord:
    o = sc.options
    if fault.kind == "restart":
        return sc.nemesis.restart_operator(trigger=fired)
    if fault.kind == "pause":
        return sc.nemesis.pause_operator(o.scaled(PAUSE_SECONDS), trigger=fired)
    if fault.kind == "kill":
        record = sc.nemesis.kill_operator(trigger=fired)
        threading.Event().wait(o.scaled(KILL_DOWNTIME))
        sc.actions.restart_operator()
        return record
    target = _target_name(fault, watch, roles)
    if fault.kind in ("scale-in", "scale-out"):
        replicas = _replicas(sc.recorder.snapshot(), target)
        step = -1 if fault.kind == "scale-in" else 1
        return sc.nemesis.scale_claimset(target, replicas=max(replicas + step, 0), trigger=fired)
    if fault.kind == "delete-claim":
        return sc.nemesis.delete_claim(target, trigger=fired)
    if fault.kind == "delete-pod":
        return sc.nemesis.delete_pod(target, trigger=fired)
    return sc.nemesis.remove_label(target, key=CLAIMED_BY_LABEL, trigger=fired)
