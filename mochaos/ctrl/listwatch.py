"""List, then watch, one kind in one namespace: every change, in the apiserver's order.

This is client-go's reflector for mo-chaos: the reference model's informer caches
(:mod:`mochaos.ctrl.informer`) and the recorder's history both stand on it. A watch is a
long response that three things end:

- the server's timeout: watch again from the last version seen (nothing is missed);
- a 410 Gone, the version was compacted away: list again and hand on the difference to what
  was known as ADDED, MODIFIED and DELETED events (a relist), so no change is skipped
  silently, only merged;
- no answer or any other API error (an apiserver restart): back off, then resume from the
  last version seen (a reconnect), for as long as the loop runs.

An error raised by the handler is not the apiserver's: it ends the loop (its thread), since
resuming would skip the change it failed on.

The last state of each object is kept (``known``), so a DELETED from a relist still
carries the object as it was last seen, as client-go's ``DeletedFinalStateUnknown`` does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from mochaos.ctrl.rest import ApiError, Gone, Kind, Kube, Obj, WatchStream

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

WATCH_TIMEOUT_SECONDS = 60
"""Server-side span of one watch request; the loop then watches again from where it was."""
LIST_TIMEOUT = 10.0
"""Seconds one LIST may take."""
BACKOFF_FIRST = 0.05
BACKOFF_MAX = 2.0
"""Reconnecting: after 0.05 s, doubling up to at most every 2 s, so that an apiserver's
restart costs little history and a long outage little load."""


@dataclass(frozen=True, slots=True)
class Event:
    """One change: the object as the apiserver sent it, and what was known before.

    ``obj`` is None only for a DELETED that a relist found (the object is gone; ``old`` is
    its last state). ``rv`` is the version the change happened at: the object's, or for a
    relist's DELETED the list's.
    """

    type: str
    obj: Obj | None
    old: Obj | None
    rv: int

    @property
    def last(self) -> Obj:
        """The object as sent, or (a relist's DELETED) as last seen."""
        obj = self.obj if self.obj is not None else self.old
        assert obj is not None
        return obj


Handle = Callable[[Event], None]
RETRIED = (ApiError, OSError)
"""What the loop recovers from: the apiserver's answers and the lack of one."""


def version(obj: Obj) -> int:
    """An object's resourceVersion as a number (0 when it has none)."""
    return int((obj.get("metadata") or {}).get("resourceVersion") or 0)


def _name(obj: Obj) -> str:
    return obj["metadata"]["name"]


class ListWatch:
    """Lists and watches one kind in one namespace; see the module docstring.

    ``handle`` is called for each change, in order, from the thread that runs
    :meth:`initial_list`, :meth:`relist` or :meth:`run`; ``on_retry`` with each error the
    loop recovers from. ``known``, ``last_rv``, ``relists`` and ``reconnects`` may be read
    from any thread.
    """

    def __init__(
        self,
        kube: Kube,
        kind: Kind,
        namespace: str,
        *,
        handle: Handle,
        stop: threading.Event,
        on_retry: Callable[[Exception], None] = lambda err: None,
    ) -> None:
        self.kind = kind
        self.namespace = namespace
        self._kube = kube
        self._handle = handle
        self._stop = stop
        self._on_retry = on_retry
        self._lock = threading.RLock()
        self._stream: WatchStream | None = None
        self.known: dict[str, Obj] = {}
        """The last state of every object that exists, by name."""
        self.last_rv = 0
        self.relists = 0
        self.reconnects = 0

    @property
    def lock(self) -> threading.RLock:
        """Held while ``known`` changes (hold it to read ``known`` consistently)."""
        return self._lock

    def list(self) -> tuple[int, list[Obj]]:
        """A consistent LIST: (the collection's resourceVersion, its objects, typed)."""
        listed = self._kube.list(self.kind, self.namespace, timeout=LIST_TIMEOUT)
        items = [self._typed(o) for o in listed.get("items") or []]
        return int(listed["metadata"]["resourceVersion"]), items

    def initial_list(self) -> int:
        """List once, hand on ADDED for what exists (in version order), and return the
        version the watch starts from."""
        return self.relist(count=False)

    def sync(self) -> bool:
        """The first list (:meth:`initial_list`), tried again with the loop's backoff until
        it answers, each failure reported to ``on_retry``; False when stopped first."""
        delay = BACKOFF_FIRST
        while not self._stop.is_set():
            try:
                self.initial_list()
                return True
            except RETRIED as err:
                delay = self._back_off(err, delay)
        return False

    def relist(self, *, count: bool = True) -> int:
        """List again and hand on what changed since what was known: DELETED (at the list's
        version) for what is gone, then ADDED and MODIFIED in version order; an object at
        the version known is not handed on again."""
        rv, items = self.list()
        current = {_name(o): o for o in items}
        if count:
            self.relists += 1
        for name in sorted(set(self.known) - set(current)):
            self._deliver(Event(DELETED, None, self.known.get(name), rv))
        for obj in sorted(items, key=version):
            old = self.known.get(_name(obj))
            if old is None:
                self._deliver(Event(ADDED, obj, None, version(obj)))
            elif version(old) != version(obj):
                self._deliver(Event(MODIFIED, obj, old, version(obj)))
        with self._lock:
            self.last_rv = max(self.last_rv, rv)
        return rv

    def run(self) -> None:
        """Watch from ``last_rv`` until stopped, resuming after the server's timeout,
        relisting after 410 Gone, reconnecting after anything else (see the module)."""
        delay = BACKOFF_FIRST
        while not self._stop.is_set():
            try:
                self._watch_once()
                delay = BACKOFF_FIRST
            except Gone:
                if self._stop.is_set():
                    return
                try:
                    self.relist()
                    delay = BACKOFF_FIRST
                except RETRIED as err:
                    delay = self._back_off(err, delay)
            except RETRIED as err:
                delay = self._back_off(err, delay)

    def _back_off(self, err: Exception, delay: float) -> float:
        if self._stop.is_set():
            return delay
        self.reconnects += 1
        self._on_retry(err)
        self._stop.wait(delay)
        return min(delay * 2, BACKOFF_MAX)

    def _watch_once(self) -> None:
        stream = self._kube.watch(
            self.kind,
            self.namespace,
            resource_version=str(self.last_rv),
            timeout_seconds=WATCH_TIMEOUT_SECONDS,
        )
        with self._lock:
            self._stream = stream
        try:
            if self._stop.is_set():  # stopped while the watch was being opened
                return
            for etype, obj in stream:
                if self._stop.is_set():
                    return
                if etype == "BOOKMARK":
                    with self._lock:
                        self.last_rv = max(self.last_rv, version(obj))
                    continue
                obj = self._typed(obj)
                old = self.known.get(_name(obj))
                self._deliver(Event(etype, obj, old, version(obj)))
        except ApiError:
            if self._stop.is_set():  # the stream was closed by stop()
                return
            raise
        finally:
            with self._lock:
                self._stream = None

    def _deliver(self, event: Event) -> None:
        name = _name(event.last)
        with self._lock:
            if event.type == DELETED:
                self.known.pop(name, None)
            else:
                self.known[name] = event.last
            self.last_rv = max(self.last_rv, event.rv)
        self._handle(event)

    def _typed(self, obj: Obj) -> Obj:
        obj.setdefault("apiVersion", self.kind.api_version)
        obj.setdefault("kind", self.kind.kind)
        return obj

    def stop(self) -> None:
        """End the watch now, also a read blocked in another thread (set ``stop`` first)."""
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()
