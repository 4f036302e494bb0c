"""The history of one test namespace: what was seen, in the order it was seen.

Watch events (:class:`Change`), the operator's log lines (:class:`LogRecord`), mo-chaos's
own actions (:class:`ActionRecord`), named points (:class:`Marker`), the ends of periods
the operator could not act (:class:`PeriodEdge`, typed) and, when an interposer stands
between the operator and the apiserver, the operator's requests (:class:`ApiCall`) and the
watch events it was given (:class:`Delivery`), each with the
recorder's sequence number and wall time; :class:`History` holds them (streamed to disk as
JSON lines), :class:`State` is the objects as of one point. The recorder writes it; the
invariants and the reports read it.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, TypeAlias


@dataclass(frozen=True, slots=True)
class Change:
    """One watch event of one object: the object as the apiserver sent it."""

    seq: int
    t: float
    kind: str
    event: str
    namespace: str
    name: str
    rv: int
    obj: dict[str, Any]
    component: str = "apiserver"


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One structured log line of the operator under test (or of the model)."""

    seq: int
    t: float
    level: str
    msg: str
    namespace: str
    name: str
    fields: dict[str, Any] = field(default_factory=dict)
    component: str = "operator"


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """One chaos or agent action, with proof of when it landed.

    ``trigger_rv`` is the resourceVersion of the observation that satisfied the
    action's trigger (None for an unconditional action); ``write_rv`` is the
    resourceVersion the apiserver gave our write. ``in_window`` is filled in
    when the recorder verified that the trigger still held at ``write_rv``.
    ``intent`` marks a record appended before its write was sent (``write_rv``
    and ``error`` filled in when it returned): any change the write caused comes
    after it in the history.
    """

    seq: int
    t: float
    action: str
    kind: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    trigger: str | None = None
    trigger_rv: int | None = None
    write_rv: int | None = None
    error: str | None = None
    in_window: bool | None = None
    component: str = "chaos"
    intent: bool = False
    fault: str | None = None
    """The fault kind this write injected (a name of mochaos.faults.FAULTS), None for the
    workload's own writes."""


@dataclass(frozen=True, slots=True)
class PeriodKind:
    """A kind of period the operator could not act, or was made not to: how the judge
    treats it and how reports name its two ends. Periods are data (:class:`PeriodEdge`):
    nothing reads their meaning back from text."""

    name: str
    stops_clock: bool
    """Deadlines, graces and windows leave it out (mochaos.invariants.judged)."""
    excuse: str
    """What a violation seen during it makes of the scenario: ``"error"`` (the operator's
    environment failed: an infrastructure error), ``"inconclusive"`` (unless the framework
    made it, e.g. its pause fault) or ``""`` (judged as any other time)."""
    start_text: str
    """How reports name its start: ``{subject}`` and ``{reason}`` are filled in."""
    end_text: str
    """How reports name its end: ``{subject}`` and ``{seconds}`` are filled in."""


APISERVER_OUTAGE = PeriodKind(
    "apiserver-outage", stops_clock=True, excuse="",
    start_text="apiserver unavailable", end_text="apiserver available again after {seconds}s",
)  # fmt: skip
"""The apiserver did not answer (mochaos.observe.availability): nobody could act."""
DEPENDENCY_OUTAGE = PeriodKind(
    "dependency-outage", stops_clock=True, excuse="error",
    start_text="dependency {subject} unavailable ({reason})",
    end_text="dependency {subject} available again after {seconds}s",
)  # fmt: skip
"""A process the operator depends on (the MatrixOne double, the workload controller) was
down or unhealthy, and no scenario made it so (mochaos.observe.periods)."""
OPERATOR_FREEZE = PeriodKind(
    "operator-freeze", stops_clock=True, excuse="inconclusive",
    start_text="operator process {subject} stopped ({reason})",
    end_text="operator process {subject} running again after {seconds}s",
)  # fmt: skip
"""The operator's process was stopped (SIGSTOP: the framework's pause fault, or someone
else)."""
OPERATOR_BLIND = PeriodKind(
    "operator-blind", stops_clock=True, excuse="",
    start_text="the operator's view of {reason} held back by the interposer (rule {subject})",
    end_text="the operator's view given back (rule {subject}) after {seconds}s",
)  # fmt: skip
"""A scenario's interposer rule held back the watch events of a kind from the operator (a
stale or unobserved view): it could act, but not see; what it did meanwhile is no verdict's
(its retries while blind are not counted)."""
OPERATOR_HELD = PeriodKind(
    "operator-held", stops_clock=True, excuse="",
    start_text="a write of the operator held by the interposer (rule {subject}): {reason}",
    end_text="the operator's held write let go (rule {subject}) after {seconds}s",
)  # fmt: skip
"""A scenario's interposer rule held a write of the operator: the controller that sent it
waits on it and cannot act meanwhile; its deadlines do not run."""
MATRIXONE_FAULT = PeriodKind(
    "matrixone-fault", stops_clock=False, excuse="",
    start_text="MatrixOne's {subject} made unreachable by the scenario ({reason})",
    end_text="MatrixOne's {subject} reachable again after {seconds}s",
)  # fmt: skip
"""A scenario made one of MatrixOne's components unreachable to the operator (a MatrixOne
fault of mochaos.faults; ``subject`` the component, ``reason`` how: refuse or hang). Not an
outage of its environment (:data:`DEPENDENCY_OUTAGE`: the MatrixOne double itself down,
which no scenario made): keeping MatrixOne's clients working through its failures is the
operator's job, so its deadlines keep running and what it does meanwhile is judged."""
PERIOD_KINDS: dict[str, PeriodKind] = {
    k.name: k
    for k in (APISERVER_OUTAGE, DEPENDENCY_OUTAGE, OPERATOR_FREEZE, OPERATOR_BLIND, OPERATOR_HELD,
              MATRIXONE_FAULT)
}  # fmt: skip
"""Every kind of period, by name."""


@dataclass(frozen=True, slots=True)
class PeriodEdge:
    """One end of a period (``edge`` ``"start"`` or ``"end"``) of kind ``period`` (a name of
    :data:`PERIOD_KINDS`) for ``subject`` (the apiserver, a dependency's name, a pid)."""

    seq: int
    t: float
    period: str
    edge: str
    subject: str
    reason: str = ""
    component: str = "cluster"

    @property
    def kind(self) -> PeriodKind:
        """Its kind (:data:`PERIOD_KINDS`)."""
        return PERIOD_KINDS[self.period]

    def text(self, seconds: float | None = None) -> str:
        """This end in its kind's words (an end says how long the period lasted, when
        ``seconds`` is known)."""
        if self.edge == "start":
            return self.kind.start_text.format(subject=self.subject, reason=self.reason)
        shown = "?" if seconds is None else f"{seconds:.1f}"
        return self.kind.end_text.format(subject=self.subject, seconds=shown)


@dataclass(frozen=True, slots=True)
class Marker:
    """A named point in the scenario (started, epilogue, settled, ...)."""

    seq: int
    t: float
    label: str
    component: str = "chaos"


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One request of the operator under test, as the interposer in front of the apiserver
    saw it: ``verb`` (get, list, watch, create, update, patch, delete), the object, the
    status the operator got, the resourceVersion a write that landed was given, and what
    the interposer did to it (``action``: pass, held, failed, crashed, stale-list; ``rule``:
    the rule that did it)."""

    seq: int
    t: float
    verb: str
    resource: str
    namespace: str
    name: str
    subresource: str = ""
    status: int = 0
    rv: int | None = None
    action: str = "pass"
    rule: str = ""
    latency_ms: float | None = None
    held_ms: float | None = None
    """How long the interposer held it before forwarding (a hold rule's)."""
    component: str = "operator"


@dataclass(frozen=True, slots=True)
class Delivery:
    """One watch event the interposer had for the operator under test (``event``: ADDED,
    MODIFIED, DELETED, ERROR) and what became of it (``action``: delivered, held, released,
    coalesced — superseded, never delivered —, discarded)."""

    seq: int
    t: float
    resource: str
    namespace: str
    name: str
    event: str
    rv: int | None = None
    action: str = "delivered"
    rule: str = ""
    component: str = "operator"


Entry: TypeAlias = Change | LogRecord | ActionRecord | Marker | PeriodEdge | ApiCall | Delivery

_ENTRY_TYPES: dict[str, type] = {
    "change": Change,
    "log": LogRecord,
    "action": ActionRecord,
    "marker": Marker,
    "period": PeriodEdge,
    "api": ApiCall,
    "delivery": Delivery,
}
_TYPE_NAMES = {cls: name for name, cls in _ENTRY_TYPES.items()}


def entry_to_dict(entry: Entry) -> dict[str, Any]:
    """Serialise an entry to a JSON-able dict with a ``type`` discriminator."""
    return {"type": _TYPE_NAMES[type(entry)], **asdict(entry)}


def entry_from_dict(data: dict[str, Any]) -> Entry:
    """Inverse of :func:`entry_to_dict`."""
    data = dict(data)
    cls = _ENTRY_TYPES[data.pop("type")]
    return cls(**data)


class State:
    """The objects as of some point of a History: kind -> name -> object."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, dict[str, Any]]] = {}

    def apply(self, change: Change) -> None:
        """Fold one watch event into the state."""
        bucket = self.objects.setdefault(change.kind, {})
        if change.event == "DELETED":
            bucket.pop(change.name, None)
        else:
            bucket[change.name] = change.obj

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist at this point."""
        return self.objects.get(kind, {}).get(name)

    def all(self, kind: str) -> dict[str, dict[str, Any]]:
        """All objects of a kind, by name."""
        return self.objects.get(kind, {})

    def copy(self) -> State:
        """A shallow copy (objects are treated as immutable)."""
        other = State()
        other.objects = {k: dict(v) for k, v in self.objects.items()}
        return other


class History(Sequence[Entry]):
    """An immutable, ordered sequence of entries (receive order = ``seq``)."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._entries: tuple[Entry, ...] = tuple(entries)

    def __getitem__(self, index):  # type: ignore[override]
        return self._entries[index]

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries)

    @property
    def start(self) -> float:
        """Time of the first entry (0.0 for an empty history)."""
        return self._entries[0].t if self._entries else 0.0

    @property
    def end(self) -> float:
        """Time of the last entry (0.0 for an empty history)."""
        return self._entries[-1].t if self._entries else 0.0

    def changes(self, kind: str | None = None) -> Iterator[Change]:
        """Watch events, optionally of one kind."""
        for e in self._entries:
            if isinstance(e, Change) and (kind is None or e.kind == kind):
                yield e

    def logs(self, msg: str | None = None) -> Iterator[LogRecord]:
        """Operator log records, optionally only those with an exact message."""
        for e in self._entries:
            if isinstance(e, LogRecord) and (msg is None or e.msg == msg):
                yield e

    def actions(self, action: str | None = None) -> Iterator[ActionRecord]:
        """Chaos/agent actions, optionally of one name."""
        for e in self._entries:
            if isinstance(e, ActionRecord) and (action is None or e.action == action):
                yield e

    def markers(self) -> Iterator[Marker]:
        """Scenario markers."""
        for e in self._entries:
            if isinstance(e, Marker):
                yield e

    def api_calls(self) -> Iterator[ApiCall]:
        """The operator's requests the interposer saw."""
        for e in self._entries:
            if isinstance(e, ApiCall):
                yield e

    def deliveries(self) -> Iterator[Delivery]:
        """The watch events the interposer had for the operator."""
        for e in self._entries:
            if isinstance(e, Delivery):
                yield e

    def period_edges(self, kind: PeriodKind | None = None) -> Iterator[PeriodEdge]:
        """The ends of periods, optionally of one kind."""
        for e in self._entries:
            if isinstance(e, PeriodEdge) and (kind is None or e.period == kind.name):
                yield e

    def replay(self) -> Iterator[tuple[Entry, State]]:
        """Yield each entry with the object state *after* it (state is shared, mutable)."""
        state = State()
        for e in self._entries:
            if isinstance(e, Change):
                state.apply(e)
            yield e, state

    def state_at_rv(self, rv: int) -> State:
        """Objects as of resourceVersion ``rv`` (etcd revisions are global)."""
        state = State()
        for e in self._entries:
            if isinstance(e, Change) and e.rv <= rv:
                state.apply(e)
        return state

    def final_state(self) -> State:
        """Objects after the last entry."""
        state = State()
        for e in self.changes():
            state.apply(e)
        return state

    def to_jsonl(self, path: Path) -> None:
        """Write the history as JSON lines (one entry per line; gzip when named ``*.gz``)."""
        with _open_text(path, "w") as fh:
            for e in self._entries:
                fh.write(json.dumps(entry_to_dict(e), sort_keys=True) + "\n")

    @classmethod
    def from_jsonl(cls, path: Path) -> History:
        """Read a history written by :meth:`to_jsonl` or streamed by the recorder: a later
        line with the same ``seq`` supersedes the earlier one (an entry completed after it
        was written, see mochaos.observe.stream), entries keep their first position."""
        entries: dict[int, Entry] = {}
        with _open_text(path, "r") as fh:
            for line in fh:
                if line.strip():
                    entry = entry_from_dict(json.loads(line))
                    entries[entry.seq] = entry
        return cls(entries.values())


def _open_text(path: Path, mode: str) -> IO[str]:
    """Open a text file, through gzip when its name ends in ``.gz``."""
    if path.suffix == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8")
    return path.open(mode, encoding="utf-8")
