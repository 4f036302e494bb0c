"""The recorder: one ordered history of everything seen in a test namespace.

It watches CNClaims, CNClaimSets, CNPools, Pods and Events, follows the
operator's log and the cluster's events file (restarts of its processes), notes when
the apiserver does not answer, and takes
our own actions and markers, appending each as one entry with a sequence number and
receive time. It is the single source of truth: triggers wait on it, invariants read
its history, the timeline renders it. Nothing else polls the API. Given a file, it
streams the history there as it records (:mod:`mochaos.observe.stream`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from kubernetes import client

from mochaos.cluster import events as cluster_events
from mochaos.ctrl.listwatch import RETRIED, Event, ListWatch
from mochaos.ctrl.rest import KINDS, Kube
from mochaos.errors import InfraError
from mochaos.observe.availability import AvailabilityProbe
from mochaos.observe.history import (
    DEPENDENCY_OUTAGE,
    OPERATOR_FREEZE,
    ActionRecord,
    Change,
    Entry,
    History,
    LogRecord,
    Marker,
    PeriodEdge,
    PeriodKind,
    State,
)
from mochaos.observe.interposed import JournalReader
from mochaos.observe.oplog import parse_log_line
from mochaos.observe.periods import Check, watch, watch_freezes
from mochaos.observe.stream import HistoryStream
from mochaos.tooling.followed_files import follow_file

WATCHED_KINDS = ("CNPool", "CNClaimSet", "CNClaim", "Pod", "Event")
CLUSTER_COMPONENT = "cluster"
"""The component of the markers that record a restart of one of the cluster's processes."""
OPERATOR_COMPONENT = "operator"
"""The component of the periods about the operator's process (its freezes)."""

Listener = Callable[[Entry, State], None]


class OperatorLog(Protocol):
    """What the recorder needs of a running operator (every
    :class:`mochaos.operator.target.RunningOperator` is one): its log, followed."""

    def follow_log(self, stop: threading.Event) -> Iterator[str]:
        """Follow the operator's log from its start, yielding raw lines, until ``stop``."""
        ...


class Recorder:
    """Records one namespace; see the module docstring."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        namespace: str,
        kinds: Iterable[str] = WATCHED_KINDS,
        clock: Callable[[], float] = time.time,
        stream_to: Path | None = None,
    ) -> None:
        """``stream_to``: the history file to write while recording (none when None)."""
        self.namespace = namespace
        self._api = api
        self._clock = clock
        self._cond = threading.Condition()
        self._entries: list[Entry] = []
        self._journal: list[Entry] = []
        """Every entry as appended, then every action record again when it is updated."""
        self._state = State()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []
        self._listeners: list[Listener] = []
        kinds = tuple(kinds)
        kube = Kube(api.configuration, user_agent=api.user_agent) if kinds else None
        self.watchers = [
            ListWatch(kube, KINDS[k], namespace, handle=partial(self._on_event, k), stop=self._stop)
            for k in kinds
        ]
        self.log_lines_skipped = 0
        self._stream = HistoryStream(stream_to) if stream_to is not None else None
        self._rewrite: set[int] = set()

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        """List every kind, then watch each from its list version in a thread."""
        if self._stream is not None:
            self._stream.start(self._unwritten)
        for w in self.watchers:
            w.initial_list()
        for w in self.watchers:
            self._spawn(f"watch-{w.kind.kind}", w.run)

    def follow_operator(self, operator: OperatorLog) -> None:
        """Tail the operator's log into the history (this namespace's lines only)."""
        self._spawn("operator-log", lambda: self._tail(operator))

    def follow_interposer(self, journal: Path) -> None:
        """Follow the journal of the interposer in front of the operator into the history:
        its requests and the watch events it was given (mochaos.observe.interposed)."""

        def tail() -> None:
            reader = JournalReader(self.namespace)
            for line in follow_file(journal, self._stop):
                with self._cond:
                    made = reader.entry_of(line, seq=len(self._entries))
                    if made is not None:
                        self._append(lambda seq, t, e=made: replace(e, seq=seq))

        self._spawn("interposer", tail)

    def follow_cluster(self, events_log: Path) -> None:
        """Record each restart of one of the cluster's processes from now on as a marker
        (component ``cluster``), at the time of the restart."""

        def tail() -> None:
            for ev in cluster_events.follow(events_log, self._stop):
                self._cluster_marker(ev.describe(), ev.t)

        self._spawn("cluster-events", tail)

    def watch_availability(self) -> None:
        """Record each period the apiserver does not answer (see
        mochaos.observe.availability)."""
        probe = AvailabilityProbe(self._api, self.period, self._stop)
        self._spawn("availability", probe.run)

    def watch_dependencies(self, checks: dict[str, Check]) -> None:
        """Record each period a dependency of the operator is unavailable (``checks``: name
        → why it is unavailable now, or None; see mochaos.observe.periods)."""
        for name, check in checks.items():
            edge = partial(self.period, DEPENDENCY_OUTAGE, subject=name)
            self._spawn(f"dependency-{name}",
                        lambda c=check, e=edge: watch(c, edge=e, stop=self._stop))  # fmt: skip

    def watch_freezes(self, pid_of: Callable[[], int | None]) -> None:
        """Record each period the operator's process (``pid_of()``) is stopped (see
        mochaos.observe.periods)."""
        self._spawn("operator-freezes",
                    lambda: watch_freezes(pid_of, partial(self.period, OPERATOR_FREEZE,
                                                          component=OPERATOR_COMPONENT),
                                          self._stop))  # fmt: skip

    def period(
        self,
        kind: PeriodKind,
        edge: str,
        *,
        subject: str,
        reason: str = "",
        t: float | None = None,
        component: str = CLUSTER_COMPONENT,
    ) -> PeriodEdge:
        """Append one end of a period of ``kind`` (at ``t``, now by default)."""
        entry = self._append(
            lambda seq, now: PeriodEdge(
                seq=seq, t=now if t is None else t, period=kind.name, edge=edge,
                subject=subject, reason=reason, component=component,
            )
        )  # fmt: skip
        assert isinstance(entry, PeriodEdge)
        return entry

    def _cluster_marker(self, label: str, t: float) -> None:
        self._append(lambda seq, _: Marker(seq=seq, t=t, label=label, component=CLUSTER_COMPONENT))

    def stop(self) -> None:
        """Stop every watch and tail, then write the rest of the history; idempotent."""
        self._stop.set()
        for w in self.watchers:
            w.stop()
        for t in self._threads:
            t.join(timeout=5)
        with self._cond:
            self._cond.notify_all()
        if self._stream is not None:
            self._stream.close()

    def _unwritten(self, written: int) -> tuple[list[Entry], int]:
        """For the stream: entries changed since they were written, then the new ones."""
        with self._cond:
            again = [self._entries[seq] for seq in sorted(self._rewrite) if seq < written]
            self._rewrite.clear()
            return again + self._entries[written:], len(self._entries)

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        def run() -> None:
            try:
                target()
            except BaseException as err:  # surfaced by check_healthy()
                if not self._stop.is_set():
                    self._errors.append(err)
                    with self._cond:
                        self._cond.notify_all()

        t = threading.Thread(target=run, name=f"recorder-{name}", daemon=True)
        t.start()
        self._threads.append(t)

    def check_healthy(self) -> None:
        """Raise InfraError when a watch or the log tail died."""
        if self._errors:
            err = self._errors[0]
            raise InfraError(
                f"recorder lost a stream: {type(err).__name__}: {err}",
                hint="the apiserver or the operator log became unreadable; see the test log",
            ) from err

    # -- appending ---------------------------------------------------------------

    def _append(self, make: Callable[[int, float], Entry]) -> Entry:
        with self._cond:
            entry = make(len(self._entries), self._clock())
            self._entries.append(entry)
            self._journal.append(entry)
            if isinstance(entry, Change):
                self._state.apply(entry)
            for listener in self._listeners:
                listener(entry, self._state)
            self._cond.notify_all()
        return entry

    def _on_event(self, kind: str, ev: Event) -> None:
        obj = ev.obj
        if obj is None:  # a relist found it gone: all we know is its name, at the list's version
            name = ev.last["metadata"]["name"]
            meta = {"name": name, "namespace": self.namespace, "resourceVersion": str(ev.rv)}
            obj = {"kind": kind, "metadata": meta}
        meta = obj.get("metadata") or {}
        # managedFields is bookkeeping of server-side apply: large and never judged.
        meta.pop("managedFields", None)
        self._append(
            lambda seq, t: Change(
                seq=seq, t=t, kind=kind, event=ev.type, namespace=meta.get("namespace", ""),
                name=meta.get("name", ""), rv=ev.rv, obj=obj,
            )
        )  # fmt: skip

    def _tail(self, operator: OperatorLog) -> None:
        for line in operator.follow_log(self._stop):
            parsed = parse_log_line(line)
            if parsed is None or parsed.namespace not in ("", self.namespace):
                self.log_lines_skipped += 1
                continue
            self._append(
                lambda seq, t, p=parsed: LogRecord(
                    seq=seq, t=log_time(p.ts, t), level=p.level, msg=p.msg,
                    namespace=p.namespace, name=p.name, fields=p.fields,
                )
            )  # fmt: skip

    def record_action(self, **fields: Any) -> ActionRecord:
        """Append an ActionRecord (fields as in :class:`.history.ActionRecord`, minus seq/t)."""
        entry = self._append(lambda seq, t: ActionRecord(seq=seq, t=t, **fields))
        assert isinstance(entry, ActionRecord)
        return entry

    def complete_action(
        self, seq: int, *, write_rv: int | None = None, error: str | None = None
    ) -> ActionRecord:
        """Fill in the result of the write an intent record at ``seq`` announced."""
        return self._update_action(seq, write_rv=write_rv, error=error)

    def mark(self, label: str) -> Marker:
        """Append a scenario marker."""
        entry = self._append(lambda seq, t: Marker(seq=seq, t=t, label=label))
        assert isinstance(entry, Marker)
        return entry

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(entry, state)`` under the recorder's lock after every append."""
        with self._cond:
            self._listeners.append(listener)

    # -- reading -----------------------------------------------------------------

    def history(self) -> History:
        """An immutable snapshot of the history so far."""
        with self._cond:
            return History(self._entries)

    def snapshot(self) -> State:
        """A copy of the current object state."""
        with self._cond:
            return self._state.copy()

    def wait_for(
        self, predicate: Callable[[State], bool], *, timeout: float
    ) -> tuple[Entry | None, State] | None:
        """Block until ``predicate(state)`` holds; return (the entry that made it true, state).

        The entry is None when the predicate already held on entry. Returns None on timeout.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            if predicate(self._state):
                return None, self._state.copy()
            seen = len(self._entries)
            while True:
                self.check_healthy()
                for entry in self._entries[seen:]:
                    seen += 1
                    if predicate(self._state):
                        return entry, self._state.copy()
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stop.is_set():
                    return None
                self._cond.wait(remaining)

    def quiet_for(self, seconds: float, *, timeout: float, kinds: Iterable[str]) -> bool:
        """Wait until no change of ``kinds`` arrived for ``seconds``; False on timeout."""
        kinds = set(kinds)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                last = next(
                    (e.t for e in reversed(self._entries)
                     if isinstance(e, Change) and e.kind in kinds),
                    0.0,
                )  # fmt: skip
                idle = self._clock() - last
                if idle >= seconds:
                    return True
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining, seconds - idle))

    def wait_for_entry(
        self, match: Callable[[Entry], bool], *, timeout: float, since: int | None = None
    ) -> Entry | None:
        """Block until an entry satisfies ``match``; None on timeout.

        Entries are considered from sequence number ``since`` (default: only new ones).
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            seen = len(self._entries) if since is None else since
            while True:
                self.check_healthy()
                for entry in self._entries[seen:]:
                    seen += 1
                    if match(entry):
                        return entry
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stop.is_set():
                    return None
                self._cond.wait(remaining)

    def resolve_action(self, seq: int, *, in_window: bool) -> None:
        """Fill in whether the action at ``seq`` landed while its trigger held."""
        self._update_action(seq, in_window=in_window)

    def _update_action(self, seq: int, **fields: Any) -> ActionRecord:
        with self._cond:
            entry = self._entries[seq]
            assert isinstance(entry, ActionRecord)
            entry = replace(entry, **fields)
            self._entries[seq] = entry
            self._rewrite.add(seq)
            self._journal.append(entry)
            self._cond.notify_all()
        return entry

    def journal(self, since: int = 0) -> tuple[list[Entry], int]:
        """What was recorded from journal position ``since`` on, and the position after it.

        New entries in ``seq`` order, and an action record again (same ``seq``) each
        time it is updated: what an incremental reader (mochaos.invariants.IncrementalChecker)
        needs, each item once, without copying the whole history.
        """
        with self._cond:
            items = self._journal[since:]
            return items, since + len(items)

    def _list_until(self, w: ListWatch, deadline: float) -> tuple[int, list[dict[str, Any]]]:
        """A consistent LIST for the barrier, tried again while the apiserver does not
        answer yet (in an outage's aftermath it says "storage is (re)initializing")."""
        while True:
            try:
                return w.list()
            except RETRIED as err:
                self.check_healthy()
                if time.monotonic() >= deadline:
                    raise InfraError(
                        f"recorder could not list {w.kind.kind} to catch up: {err}",
                        hint="the apiserver did not answer; see the cluster's markers",
                    ) from err
                self._stop.wait(0.2)

    def barrier(self, *, timeout: float = 10.0) -> None:
        """Wait until the history holds every change made before this call, for every kind.

        A consistent LIST gives a version V per kind; the watch has caught up when it
        delivered anything at or past V, or when our state already equals the list.
        """
        for w in self.watchers:
            deadline = time.monotonic() + timeout
            version, items = self._list_until(w, deadline)
            want = {o["metadata"]["name"]: int(o["metadata"]["resourceVersion"]) for o in items}
            with self._cond:
                while not (w.last_rv >= version or _matches(self._state.all(w.kind.kind), want)):
                    self.check_healthy()
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise InfraError(
                            f"recorder did not catch up with the apiserver for {w.kind.kind} "
                            f"in {timeout:.0f}s",
                            hint="the watch is stuck; see the test log",
                        )
                    self._cond.wait(min(remaining, 0.2))


def log_time(stamp: float | None, received: float) -> float:
    """When a log line happened. The real operator stamps lines with whole seconds (zap's
    RFC 3339 encoder), too coarse to order them among the watch events they cause: such a
    line is placed at the moment we read it (the file is followed every 50 ms); a finer
    stamp (the model's) is kept."""
    if stamp is None or stamp == int(stamp):
        return received
    return stamp


def _matches(objects: dict[str, dict[str, Any]], want: dict[str, int]) -> bool:
    if set(objects) != set(want):
        return False
    return all(int(objects[n]["metadata"]["resourceVersion"]) >= rv for n, rv in want.items())
