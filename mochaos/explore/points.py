"""Injection points: the distinct state transitions the operator caused in a learn run.

Between the case's ``drive`` marker and its settling, every watch event the operator (or
the environment answering it) caused — not one of our own writes — is compared with the
object's previous state attribute by attribute (:mod:`mochaos.explore.abstraction`); each
distinct (role, attribute, from, to) is one point, numbered in the order first seen. A
point becomes a :class:`PointWatch`: the ``Predicate`` a trigger waits on.
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
from mochaos.observe.history import ActionRecord, Change, History, Marker, State

DRIVE_MARKER = "drive"
"""Recorded right before the workload's drive: points are transitions after it."""
END_MARKERS = ("settled", "settle-timeout", "epilogue")
"""The first of these after the drive ends the part points are taken from."""
ROLES_ACTION = "workload_roles"
"""The action record that names each object's role (params: name -> role)."""


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

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        """What makes two points the same, in any run."""
        return (self.kind, self.role, self.attr, self.before, self.after)

    @property
    def transition(self) -> str:
        """``phase Bound → Draining``, ``created``, ``gone``."""
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
                )  # fmt: skip
    ordered = sorted(seen.values(), key=lambda p: p.first_seen)
    return [_numbered(p, i) for i, p in enumerate(ordered, 1)]


def _numbered(point: Point, index: int) -> Point:
    data = point.to_dict() | {"id": f"p{index:02d}"}
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
