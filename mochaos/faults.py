"""Faults as data: the one table of the fault kinds mo-chaos injects.

A fault is a value (:class:`Fault`: a kind, a target, parameters), made by calling its kind
(``scale_claimset("s1", replicas=1)``, ``delete_pod(pod)``, ``restart_operator()``), as
Jepsen's nemesis takes an operation. Each kind says, as data:

- what it targets (a kind of object, the operator under test, or the test namespace's
  MatrixOne);
- how it is applied: one write to its target (:class:`ObjectWrite`), a call on the running
  operator (:class:`OperatorCall`), a rule of the operator's interposer
  (:class:`InterposerRule`: what the operator sees and when its writes land) or one of
  MatrixOne's components made unreachable to the operator (:class:`MatrixOneFault`);
- how its landing is proven: the resourceVersion of its own write, or of a probe write just
  before or just after it (:class:`Proof`);
- how reports name it and recognise its effect on its target.

The scenario's one write path applies them (``Scenario.inject``), ``explore`` picks them by
target kind, the timeline renders them and matches them to the changes they caused, and the
judge reads which of them freeze the operator. A new fault kind is one entry of
:data:`FAULTS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from mochaos.ctrl.mo_components import HAKEEPER, HOWS, LOCK_SERVICE, QUERY, REFUSE, query_of
from mochaos.ctrl.objects import CLAIMED_BY_LABEL, deleting, labels_of
from mochaos.errors import UsageError

Obj = Mapping[str, Any]


class Proof(StrEnum):
    """How a fault's landing is dated on the apiserver's one clock (resourceVersions)."""

    WRITE = "write"
    """By the resourceVersion of the fault's own write."""
    PROBE_BEFORE = "probe-before"
    """By a probe write to the test namespace just before the fault (it makes no write, and
    what it does may keep the next write from landing soon: a restart)."""
    PROBE_AFTER = "probe-after"
    """By a probe write just after the fault (it makes no write: a kill, a freeze)."""


@dataclass(frozen=True)
class ObjectWrite:
    """Applied as one write to the target object: ``method`` on its path (or its
    ``subresource``), with the merge patch ``body`` makes of the fault's parameters."""

    method: str
    subresource: str = ""
    body: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None


@dataclass(frozen=True)
class OperatorCall:
    """Applied as a call on the running operator: ``restart``, ``pause`` or ``kill``."""

    method: str


@dataclass(frozen=True)
class InterposerRule:
    """Applied as a rule of the operator's interposer (mochaos.interpose.rules): ``action``
    on the operator's requests (hold, fail, crash) or on the watch events it is given
    (freeze, coalesce, stale-list: its next list answered from an earlier state, then a
    restart), for objects of the kind the fault's ``kind`` parameter names. It landed when
    the rule took something (checked at the verdict: a rule that never matched is a fault
    that did not happen)."""

    action: str
    verbs: tuple[str, ...] = ()
    """The verbs it takes by default (a fault may name others)."""


@dataclass(frozen=True)
class MatrixOneFault:
    """Applied as one of MatrixOne's components made unreachable to the operator, on the
    address it dials (mochaos.ctrl.mo_components: ``component``, per pod for a query service,
    the fault's target), by the operator target's environment (the local cluster's
    MatrixOne double, the model's own MatrixOne). Brought back when its ``seconds`` pass,
    when the scenario releases it, or at the end of the test's body, whichever comes
    first. It landed when the environment confirmed the component down; the scenario
    records the period it stood (a typed period, judged like any other time: keeping
    MatrixOne's clients working through its failures is the operator's job)."""

    component: str

    def of(self, target: str) -> str:
        """The component a fault of this kind on ``target`` makes unreachable: its own, or
        ``query/<pod>`` for a CN's query service."""
        return query_of(target) if self.component == QUERY else self.component


OBJECT = "object"
"""A fault's ``target_kind`` when the ``kind`` parameter says which kind it aims at (its
target a name, or none for every object of that kind): the interposer's faults."""
RESTORE_MATRIXONE = "restore_matrixone"
"""The action (``ActionRecord.action``) that brings back the component a MatrixOne fault
took down."""
MATRIXONE = "MatrixOne"
"""A fault's ``target_kind`` when it aims at the test namespace's MatrixOne as a whole (it
takes no target name): HAKeeper, the TN's lock service."""
WRITES = ("create", "update", "patch", "delete")


def _spec(obj: Obj | None, key: str) -> Any:
    return ((obj or {}).get("spec") or {}).get(key)


def _replicas_changed(prev: Obj | None, cur: Obj, params: Mapping[str, Any]) -> bool:
    return _spec(prev, "replicas") != _spec(cur, "replicas")


def _deleted(prev: Obj | None, cur: Obj | None, params: Mapping[str, Any]) -> bool:
    return cur is None or (deleting(cur) and not deleting(prev or {}))


def _labels_changed(prev: Obj | None, cur: Obj, params: Mapping[str, Any]) -> bool:
    return labels_of(prev or {}) != labels_of(cur)


def _scale_text(params: Mapping[str, Any], prev: Obj | None) -> str:
    old = _spec(prev, "replicas")
    return f"scale replicas {f'{old} → ' if old is not None else ''}{params.get('replicas')}"


def _replicas_step(step: int) -> Callable[[Obj], dict[str, Any]]:
    def derive(obj: Obj) -> dict[str, Any]:
        return {"replicas": max(int(_spec(obj, "replicas") or 0) + step, 0)}

    return derive


@dataclass(frozen=True)
class FaultKind:
    """One kind of fault; calling it makes a :class:`Fault` of this kind."""

    name: str
    """Its name in reports, ``explore --faults`` and the history (``ActionRecord.fault``)."""
    action: str
    """The name of its write in the history (``ActionRecord.action``)."""
    target_kind: str | None
    """The kind of object it targets; None: the operator under test; :data:`MATRIXONE`:
    the namespace's MatrixOne; :data:`OBJECT`: the kind its parameters name."""
    summary: str
    apply: ObjectWrite | OperatorCall | InterposerRule | MatrixOneFault
    proof: Proof
    render: Callable[[Mapping[str, Any], Obj | None], str]
    """Its text in reports, from its parameters and its target before it."""
    effect: Callable[[Obj | None, Obj | None, Mapping[str, Any]], bool] | None = None
    """Whether a change of its target (before, after; None: gone) is this fault's effect."""
    params: tuple[str, ...] = ()
    """The parameters a fault of this kind must be given."""
    defaults: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    derive: Callable[[Obj], dict[str, Any]] | None = None
    """Parameters read from the target as it is when the fault is injected."""
    freezes_operator: bool = False
    """It stops the operator's process for ``params["seconds"]``: the freeze the recorder
    sees then is the framework's own (mochaos.invariants.judged.external_freezes)."""
    explored: bool = True
    """Offered by ``explore``'s default matrix."""

    def __repr__(self) -> str:
        return f"FaultKind({self.name!r})"

    def __call__(self, target: str = "", **params: Any) -> Fault:
        """A fault of this kind on ``target`` (a name; none for the operator)."""
        named = self.target_kind not in (None, MATRIXONE)
        if self.target_kind == OBJECT:
            pass  # a name, or every object of its kind
        elif bool(target) != named:
            what = f"a {self.target_kind} name" if named else "no target"
            raise UsageError(f"fault {self.name} takes {what}", hint=f"got {target!r}")
        missing = [p for p in self.params if p not in params]
        unknown = [p for p in params if p not in (*self.params, *self.defaults)]
        if missing or unknown:
            raise UsageError(
                f"fault {self.name}: {'missing ' + ', '.join(missing) if missing else ''}"
                f"{'; ' if missing and unknown else ''}"
                f"{'unknown ' + ', '.join(unknown) if unknown else ''}",
                hint=f"it takes {', '.join((*self.params, *self.defaults)) or 'no parameter'}",
            )
        fault = Fault(self, target, MappingProxyType({**self.defaults, **params}))
        if isinstance(self.apply, MatrixOneFault) and fault.params["how"] not in HOWS:
            raise UsageError(f"fault {self.name}: how={fault.params['how']!r}",
                             hint=f"give one of {', '.join(HOWS)}")  # fmt: skip
        return fault


@dataclass(frozen=True)
class Fault:
    """One fault: its kind, its target's name ("" for the operator) and its parameters."""

    kind: FaultKind
    target: str = ""
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def label(self) -> str:
        """``delete-pod pool-x``, ``restart``."""
        return f"{self.kind.name} {self.target}" if self.target else self.kind.name

    def __repr__(self) -> str:
        args = [repr(self.target)] if self.target else []
        args += [f"{k}={v!r}" for k, v in self.params.items()]
        return f"Fault({self.kind.name}: {', '.join(args)})"


scale_claimset = FaultKind(
    "scale", "scale_claimset", "CNClaimSet", "the claim set's replicas set to a number",
    ObjectWrite("PATCH", "scale", lambda p: {"spec": {"replicas": p["replicas"]}}), Proof.WRITE,
    _scale_text, _replicas_changed, params=("replicas",), explored=False,
)  # fmt: skip
scale_in = FaultKind(
    "scale-in", "scale_claimset", "CNClaimSet", "the claim set's replicas lowered by one",
    scale_claimset.apply, Proof.WRITE, _scale_text, _replicas_changed,
    derive=_replicas_step(-1),
)  # fmt: skip
scale_out = FaultKind(
    "scale-out", "scale_claimset", "CNClaimSet", "the claim set's replicas raised by one",
    scale_claimset.apply, Proof.WRITE, _scale_text, _replicas_changed,
    derive=_replicas_step(+1),
)  # fmt: skip
delete_claim = FaultKind(
    "delete-claim", "delete_claim", "CNClaim", "the claim deleted",
    ObjectWrite("DELETE"), Proof.WRITE, lambda p, prev: "delete", _deleted,
)  # fmt: skip
delete_pod = FaultKind(
    "delete-pod", "delete_pod", "Pod", "the pod deleted",
    ObjectWrite("DELETE"), Proof.WRITE, lambda p, prev: "delete", _deleted,
)  # fmt: skip
remove_label = FaultKind(
    "remove-label", "remove_label", "Pod", f"the pod's {CLAIMED_BY_LABEL} label removed",
    ObjectWrite("PATCH", body=lambda p: {"metadata": {"labels": {p["key"]: None}}}),
    Proof.WRITE, lambda p, prev: f"remove label {p['key']}", _labels_changed,
    defaults=MappingProxyType({"key": CLAIMED_BY_LABEL}),
)  # fmt: skip
restart_operator = FaultKind(
    "restart", "restart_operator", None, "the operator stopped and started again (a fresh list)",
    OperatorCall("restart"), Proof.PROBE_BEFORE, lambda p, prev: "restart operator",
)  # fmt: skip
pause_operator = FaultKind(
    "pause", "pause_operator", None, "the operator frozen for a while (10 s in explore)",
    OperatorCall("pause"), Proof.PROBE_AFTER,
    lambda p, prev: f"pause operator for {p['seconds']} s", params=("seconds",),
    freezes_operator=True,
)  # fmt: skip
kill_operator = FaultKind(
    "kill", "kill_operator", None,
    "the operator killed (in explore started again 5 s later, as a crashed pod by its kubelet)",
    OperatorCall("kill"), Proof.PROBE_AFTER, lambda p, prev: "kill operator",
    defaults=MappingProxyType({"downtime": None}),
)  # fmt: skip


def _rule_text(verb: str) -> Callable[[Mapping[str, Any], Obj | None], str]:
    def render(p: Mapping[str, Any], prev: Obj | None) -> str:
        what = f"{'/'.join(p.get('verbs') or ()) or 'writes'} of {p['kind']}"
        shown = [f"{k}={v}" for k, v in (p.get("labels") or {}).items()]
        shown += [" ".join(str(x) for x in f if x is not None) for f in p.get("fields") or ()]
        return f"{verb} {what}" + (f" where {', '.join(shown)}" if shown else "")

    return render


_RULE_PARAMS = MappingProxyType({
    "verbs": None, "labels": None, "fields": (), "subresource": None, "times": 1,
    "timeout": None,
})  # fmt: skip
hold_write = FaultKind(
    "hold-write", "hold_write", OBJECT,
    "the operator's next matching write not forwarded until released (or its timeout)",
    InterposerRule("hold", WRITES), Proof.PROBE_AFTER, _rule_text("hold"),
    params=("kind",), defaults=_RULE_PARAMS,
)  # fmt: skip
fail_write = FaultKind(
    "fail-write", "fail_write", OBJECT,
    "the operator's next matching writes answered with an error (409 Conflict by default)",
    InterposerRule("fail", WRITES), Proof.PROBE_AFTER, _rule_text("fail"),
    params=("kind",), defaults=MappingProxyType({**_RULE_PARAMS, "status": 409}),
)  # fmt: skip
crash_after_write = FaultKind(
    "crash-after-write", "crash_after_write", OBJECT,
    "the operator killed the moment the apiserver accepted its matching write, before it saw "
    "the answer, then started again",
    InterposerRule("crash", WRITES), Proof.PROBE_AFTER, _rule_text("crash after"),
    params=("kind",), defaults=_RULE_PARAMS,
)  # fmt: skip
stale_view = FaultKind(
    "stale-view", "stale_view", OBJECT,
    "the operator's watch of a kind frozen (its events held, in order) until released",
    InterposerRule("freeze", ("watch",)), Proof.PROBE_AFTER, _rule_text("freeze the view of"),
    params=("kind",), defaults=_RULE_PARAMS,
)  # fmt: skip
unobserved = FaultKind(
    "unobserved", "unobserved", OBJECT,
    "a kind's watch events held, and on release only each object's newest state delivered",
    InterposerRule("coalesce", ("watch",)), Proof.PROBE_AFTER,
    _rule_text("coalesce the view of"), params=("kind",), defaults=_RULE_PARAMS,
)  # fmt: skip
restart_stale = FaultKind(
    "restart-stale", "restart_stale", OBJECT,
    "the operator restarted onto a stale view: its first list of a kind answered from the "
    "state at an earlier resourceVersion",
    InterposerRule("stale-list", ("list",)), Proof.PROBE_AFTER,
    lambda p, prev: f"restart operator onto {p['kind']} as at rv {p['at']}",
    params=("kind", "at"), defaults=MappingProxyType({"times": 1}),
)  # fmt: skip


def _down_text(what: str) -> Callable[[Mapping[str, Any], Obj | None], str]:
    def render(p: Mapping[str, Any], prev: Obj | None) -> str:
        seconds = p.get("seconds")
        held = f" for {seconds:g} s" if seconds is not None else " until released"
        return f"make {what} unreachable ({p.get('how', REFUSE)}){held}"

    return render


_DOWN_PARAMS = MappingProxyType({"seconds": None, "how": REFUSE})
hakeeper_down = FaultKind(
    "hakeeper-down", "hakeeper_down", MATRIXONE,
    "MatrixOne's HAKeeper unreachable to the operator for a while (refused, or hanging: each "
    "call fails on the operator's own timeout); HAKeeper itself runs on",
    MatrixOneFault(HAKEEPER), Proof.PROBE_AFTER, _down_text("MatrixOne's HAKeeper"),
    defaults=_DOWN_PARAMS,
)  # fmt: skip
lockservice_down = FaultKind(
    "lockservice-down", "lockservice_down", MATRIXONE,
    "the TN's lock service unreachable to the operator for a while (what a CN's drain asks "
    "before kruise may delete its pod)",
    MatrixOneFault(LOCK_SERVICE), Proof.PROBE_AFTER, _down_text("the TN's lock service"),
    defaults=_DOWN_PARAMS,
)  # fmt: skip
query_down = FaultKind(
    "query-down", "query_down", "Pod",
    "a CN's query service unreachable to the operator for a while (its sessions, pipelines "
    "and replicas unknown)",
    MatrixOneFault(QUERY), Proof.PROBE_AFTER, _down_text("the CN's query service"),
    defaults=_DOWN_PARAMS,
)  # fmt: skip

FAULTS: dict[str, FaultKind] = {
    k.name: k
    for k in (
        scale_claimset, scale_in, scale_out, delete_claim, delete_pod, remove_label,
        restart_operator, kill_operator, pause_operator, hold_write, fail_write,
        crash_after_write, stale_view, unobserved, restart_stale, hakeeper_down,
        lockservice_down, query_down,
    )
}  # fmt: skip
"""Every fault kind, by name."""


def fault_kind(name: str) -> FaultKind:
    """The kind of that name; UsageError naming the known ones otherwise."""
    try:
        return FAULTS[name]
    except KeyError:
        raise UsageError(
            f"unknown fault {name!r}", hint=f"use one of {', '.join(FAULTS)}"
        ) from None


def of_action(action: str, fault: str | None) -> FaultKind | None:
    """The fault kind of a recorded write: by its ``fault`` name, or for a history recorded
    before writes named their fault, by its action's name (None: not a fault)."""
    if fault is not None:
        return FAULTS.get(fault)
    return next((k for k in FAULTS.values() if k.action == action), None)
