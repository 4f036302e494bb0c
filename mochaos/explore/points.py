"""Injection points: the distinct state transitions the operator caused in a learn run.

Between the case's ``drive`` marker and its settling, every watch event the operator (or
the environment answering it) caused — not one of our own writes — is compared with the
object's previous state attribute by attribute (:mod:`mochaos.explore.abstraction`); each
distinct (role, attribute, from, to) is one point, numbered in the order first seen. A
point becomes a :class:`PointWatch`: the ``Predicate`` a trigger waits on.

When an interposer stood in front of the operator, the learn run also says what the
operator did with each point: whether it was given the state and wrote anything after it
before the object changed again (``read``: a fault on its view there can change what it
does), and which of its writes came first after it (``next_write``: two points before the
same write are the same place for a fault on that write). Each distinct write of the
operator (kind, role, verb, subresource) is a point of its own (``w01``, …): where a crash
right after a write can be injected.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from mochaos.explore.abstraction import (
    ABSENT,
    EXISTS,
    KINDS,
    PRESENT,
    references,
    role_of,
    value,
)
from mochaos.explore.abstraction import attributes as abstract
from mochaos.observe.history import ActionRecord, ApiCall, Change, History, Marker, State

DRIVE_MARKER = "drive"
"""Recorded right before the workload's drive: points are transitions after it."""
END_MARKERS = ("settled", "settle-timeout", "epilogue")
"""The first of these after the drive ends the part points are taken from."""
ROLES_ACTION = "workload_roles"
"""The action record that names each object's role (params: name -> role)."""
WRITE = "write"
"""The attribute of a write point: ``before`` its verb, ``after`` its subresource."""
WRITES = ("create", "update", "patch", "delete")
RESOURCE_KINDS = {"cnclaimsets": "CNClaimSet", "cnclaims": "CNClaim", "pods": "Pod"}
"""The kinds of the operator's writes that can be write points, by resource."""


@dataclass(frozen=True)
class Point:
    """One injection point: an object of a role went from one abstract value to another."""

    id: str
    kind: str
    role: str
    attr: str
    before: str
    after: str
    first_seen: float
    """Seconds from the drive's start to its first occurrence in the learn run."""
    named: bool
    """The role is one the workload names (one object), not a rule's (pool pods, new claims)."""
    related: dict[str, list[str]] = field(default_factory=dict)
    """Kind -> the named roles of the objects it referred to, or that referred to it, then."""
    attrs: dict[str, str] = field(default_factory=dict)
    """The object's abstract attributes right after it (empty when it is gone)."""
    read: bool | None = None
    """The operator was given this state and wrote something after it, before its object
    changed again (None: unknown, no interposer in the learn run)."""
    next_write: str = ""
    """The operator's first write after it (``update cnclaims/status of migrating claim``)."""

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        """What makes two points the same, in any run."""
        return (self.kind, self.role, self.attr, self.before, self.after)

    @property
    def is_write(self) -> bool:
        """A write of the operator (``w01``), not a state transition."""
        return self.attr == WRITE

    @property
    def transition(self) -> str:
        """``phase Bound → Draining``, ``created``, ``gone``, ``the operator's update/status``."""
        if self.attr == WRITE:
            return f"the operator's {self.before}" + (f"/{self.after}" if self.after else "")
        if self.attr == EXISTS:
            return "created" if self.after == PRESENT else "gone"
        return f"{self.attr} {self.before} → {self.after}"

    @property
    def label(self) -> str:
        """``source pod: phase Bound → Draining``."""
        return f"{self.role}: {self.transition}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Point:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


def recorded_roles(history: History) -> dict[str, str]:
    """The roles the case recorded (empty when it recorded none)."""
    for action in history.actions(ROLES_ACTION):
        return dict(action.params)
    return {}


def _window(history: History) -> tuple[int, float, int] | None:
    """(seq of the drive marker, its time, seq of the end marker) or None without a drive."""
    start = next((m for m in history.markers() if m.label == DRIVE_MARKER), None)
    if start is None:
        return None
    end = next(
        (e.seq for e in history if isinstance(e, Marker) and e.seq > start.seq
         and e.label in END_MARKERS),
        len(history),
    )  # fmt: skip
    return start.seq, start.t, end


def _ours(history: History) -> set[int]:
    """The resourceVersions of our own writes (chaos and agent)."""
    return {a.write_rv for a in history if isinstance(a, ActionRecord) and a.write_rv}


def _related(kind: str, name: str, state: State, roles: dict[str, str]) -> dict[str, list[str]]:
    named = {
        k: sorted({roles[n] for n in names if n in roles})
        for k, names in references(kind, name, state).items()
    }
    return {k: v for k, v in named.items() if v}


def extract(history: History) -> list[Point]:
    """The learn run's injection points, in the order first seen (empty without a drive)."""
    window = _window(history)
    if window is None:
        return []
    start_seq, start_t, end_seq = window
    roles = recorded_roles(history)
    ours = _ours(history)
    state = State()
    seen: dict[tuple[str, str, str, str, str], Point] = {}
    for entry in history:
        if entry.seq >= end_seq:
            break
        if not isinstance(entry, Change):
            continue
        if entry.kind not in KINDS:
            state.apply(entry)
            continue
        old = state.get(entry.kind, entry.name)
        before = {EXISTS: PRESENT, **abstract(entry.kind, old, state, roles)} if old else {}
        state.apply(entry)
        new = state.get(entry.kind, entry.name)
        after = {EXISTS: PRESENT, **abstract(entry.kind, new, state, roles)} if new else {}
        if entry.seq < start_seq or entry.rv in ours:
            continue
        role = role_of(entry.kind, entry.name, new or old, roles)
        for attr in dict.fromkeys([*before, *after]):
            was, now = before.get(attr, ABSENT), after.get(attr, ABSENT)
            if was == now or (attr != EXISTS and ABSENT in (was, now)):
                continue
            key = (entry.kind, role, attr, was, now)
            if key not in seen:
                seen[key] = Point(
                    id="", kind=entry.kind, role=role, attr=attr, before=was, after=now,
                    first_seen=round(entry.t - start_t, 3), named=entry.name in roles,
                    related=_related(entry.kind, entry.name, state, roles),
                    attrs={k: v for k, v in after.items() if k != EXISTS},
                    **_reading(history, entry, end_seq, roles, state),
                )  # fmt: skip
    ordered = sorted(seen.values(), key=lambda p: p.first_seen)
    points = [_numbered(p, "p", i) for i, p in enumerate(ordered, 1)]
    return points + _write_points(history, start_seq, start_t, end_seq, roles)


def _operator_writes(history: History) -> list[ApiCall]:
    """The writes of the operator that landed (2xx), as the interposer saw them."""
    return [
        c for c in history.api_calls()
        if c.verb in WRITES and 200 <= c.status < 300 and c.resource in RESOURCE_KINDS
    ]  # fmt: skip


def _write_label(call: ApiCall, state: State, roles: dict[str, str]) -> str:
    kind = RESOURCE_KINDS[call.resource]
    role = role_of(kind, call.name, state.get(kind, call.name), roles)
    return (
        f"{call.verb} {call.resource}{'/' + call.subresource if call.subresource else ''} of {role}"
    )


def _reading(
    history: History, change: Change, end_seq: int, roles: dict[str, str], state: State
) -> dict[str, Any]:
    """``read`` and ``next_write`` of the point a change is (see the module docstring)."""
    writes = [w for w in _operator_writes(history) if change.seq < w.seq < end_seq]
    deliveries = list(history.deliveries())
    if not deliveries and not writes:
        return {}
    nxt = writes[0] if writes else None
    given = next((d for d in deliveries if d.name == change.name and d.rv == change.rv
                  and d.action in ("delivered", "released")), None)  # fmt: skip
    later = next((c.seq for c in history.changes(change.kind)
                  if c.name == change.name and c.seq > change.seq), end_seq)  # fmt: skip
    read = given is not None and any(given.seq < w.seq < later for w in writes)
    return {"read": read, "next_write": _write_label(nxt, state, roles) if nxt else ""}


def _write_points(
    history: History, start_seq: int, start_t: float, end_seq: int, roles: dict[str, str]
) -> list[Point]:
    """Each distinct write of the operator in the window, as a point (``w01``, …)."""
    state, seen = State(), {}
    writes = {w.seq: w for w in _operator_writes(history) if start_seq < w.seq < end_seq}
    for entry in history:
        if isinstance(entry, Change):
            state.apply(entry)
        call = writes.get(entry.seq)
        if call is None:
            continue
        kind = RESOURCE_KINDS[call.resource]
        role = role_of(kind, call.name, state.get(kind, call.name), roles)
        key = (kind, role, call.verb, call.subresource)
        seen.setdefault(key, Point(
            id="", kind=kind, role=role, attr=WRITE, before=call.verb, after=call.subresource,
            first_seen=round(call.t - start_t, 3), named=call.name in roles,
        ))  # fmt: skip
    ordered = sorted(seen.values(), key=lambda p: p.first_seen)
    return [_numbered(p, "w", i) for i, p in enumerate(ordered, 1)]


def _numbered(point: Point, prefix: str, index: int) -> Point:
    data = point.to_dict() | {"id": f"{prefix}{index:02d}"}
    return Point.from_dict(data)


class PointWatch:
    """A point as a trigger's predicate in another run, with that run's names.

    It must see every state from before the drive on (:meth:`observe`, fed by a recorder
    listener): it holds when an object of the point's role now has the ``after`` value
    and was seen with the ``before`` value earlier (created: absent when the watch began;
    gone: seen before and now absent). :attr:`matched` is the object it last held for.
    """

    def __init__(self, point: Point, roles: dict[str, str]) -> None:
        self.point = point
        self.name = f"{point.id} {point.label}"
        self._roles = roles
        self._before: set[str] = set()
        self._role_seen: dict[str, str] = {}
        self._initial: set[str] | None = None
        self.matched: str | None = None

    def _value(self, name: str, obj: dict[str, Any] | None, state: State) -> str:
        return value(self.point.kind, self.point.attr, obj, state, self._roles)

    def observe(self, state: State) -> None:
        """Remember which objects of the role had the ``before`` value in this state."""
        p = self.point
        objects = state.all(p.kind)
        if self._initial is None:
            self._initial = set(objects)
        for name, obj in objects.items():
            if role_of(p.kind, name, obj, self._roles) != p.role:
                continue
            self._role_seen[name] = p.role
            if self._value(name, obj, state) == p.before:
                self._before.add(name)

    def __call__(self, state: State) -> bool:
        p = self.point
        objects = state.all(p.kind)
        if p.attr == EXISTS and p.after == ABSENT:
            gone = sorted(n for n in self._role_seen if n not in objects)
            self.matched = gone[0] if gone else None
            return bool(gone)
        for name, obj in sorted(objects.items()):
            if role_of(p.kind, name, obj, self._roles) != p.role:
                continue
            if self._value(name, obj, state) != p.after:
                continue
            created = p.attr == EXISTS and name not in (self._initial or set())
            if created or name in self._before:
                self.matched = name
                return True
        return False
