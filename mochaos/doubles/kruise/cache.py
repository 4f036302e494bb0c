"""A cluster-wide list+watch cache of one resource type: the double's informer.

Objects are keyed by (namespace, name). Handlers get ``(event, old, new)`` for every change;
a watch that the server ends resumes from the last version seen, a 410 Gone relists and
replays the difference, a broken connection is retried with backoff (tenacity). The
controller writes its own results through (:meth:`Cache.store`) so its next pass never acts
on a state older than its last write; a watch event older than the cached object is dropped,
and a written-through copy of an object the watch already reported deleted is refused.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_never,
    wait_exponential,
)

from mochaos.doubles.kruise.api import Api, ApiError, Gone, Obj, Resource

Key = tuple[str, str]
Handler = Callable[[str, Obj | None, Obj | None], None]
ErrorSink = Callable[[str], None]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

TOMBSTONE_TTL = 300.0
"""Seconds a deleted object's uid is remembered, to refuse late write-throughs of it."""

WATCH_TIMEOUT = 300
"""Server-side watch timeout in seconds; the watch resumes from the last version seen."""

# Reconnect to a restarting apiserver: quickly first, then every 2 s at most, until stopped.
RECONNECT = dict(
    wait=wait_exponential(multiplier=0.05, max=2.0),
    stop=stop_never,
    retry=retry_if_exception_type((ApiError, OSError)),
    reraise=True,
)


def key_of(obj: Obj) -> Key:
    """(namespace, name) of an object ("" namespace for cluster-scoped ones)."""
    m = obj.get("metadata") or {}
    return m.get("namespace", ""), m.get("name", "")


def _uid(obj: Obj) -> str:
    return (obj.get("metadata") or {}).get("uid", "")


def version_of(obj: Obj | None) -> int:
    """metadata.resourceVersion as a number (etcd revisions grow monotonically; 0 if none)."""
    raw = ((obj or {}).get("metadata") or {}).get("resourceVersion") or "0"
    return int(raw) if raw.isdigit() else 0


class Cache:
    """The cache of one resource type (see module docstring)."""

    def __init__(self, api: Api, res: Resource, *, on_error: ErrorSink) -> None:
        self.res = res
        self._api = api
        self._on_error = on_error
        self._items: dict[Key, Obj] = {}
        self._lock = threading.RLock()
        self._handlers: list[Handler] = []
        self._rv = ""
        self._tombstones: dict[str, float] = {}
        self.synced = threading.Event()

    def add_handler(self, handler: Handler) -> None:
        """Call ``handler(event, old, new)`` on every change (register before :meth:`run`)."""
        self._handlers.append(handler)

    def get(self, namespace: str, name: str) -> Obj | None:
        """A copy of the cached object, or None."""
        with self._lock:
            obj = self._items.get((namespace, name))
            return copy.deepcopy(obj) if obj is not None else None

    def list(
        self, namespace: str | None = None, where: Callable[[Obj], bool] | None = None
    ) -> list[Obj]:
        """Copies of the cached objects of ``namespace`` (all when None) passing ``where``, in
        (namespace, name) order."""
        with self._lock:
            items = [
                obj
                for key, obj in sorted(self._items.items())
                if namespace is None or key[0] == namespace
            ]
        return [copy.deepcopy(o) for o in items if where is None or where(o)]

    def store(self, obj: Obj) -> None:
        """Write through an object the controller just received from the apiserver (kept only
        when it is newer than the cached copy)."""
        obj = self._typed(copy.deepcopy(obj))
        with self._lock:
            if _uid(obj) in self._tombstones:
                return  # the watch already said it is gone
            old = self._items.get(key_of(obj))
            if old is not None and version_of(old) >= version_of(obj):
                return
            self._items[key_of(obj)] = obj

    def run(self, stop: threading.Event) -> None:
        """Thread body: list, then watch, until ``stop`` is set. A 410 Gone or a lost
        connection lists again (after a backoff); each failure is reported."""
        while not stop.is_set():
            try:
                for attempt in Retrying(**RECONNECT, before_sleep=self._report):
                    with attempt:
                        if stop.is_set():
                            return
                        self._relist()
                        self.synced.set()
                        self._watch(stop)
            except Exception as err:  # a bug in a handler path: report, keep serving
                if stop.is_set():
                    return
                self._on_error(f"watch {self.res.plural}: {err!r}")
                stop.wait(0.5)

    def _report(self, state: RetryCallState) -> None:
        err = state.outcome.exception() if state.outcome else None
        if not isinstance(err, Gone):
            self._on_error(f"watch {self.res.plural}: {err}")

    def _relist(self) -> None:
        listed = self._api.list(self.res)
        fresh = {key_of(o): self._typed(o) for o in listed.get("items") or []}
        with self._lock:
            old_items = self._items
            self._items = dict(fresh)
            self._rv = listed["metadata"]["resourceVersion"]
        self._replay(old_items, fresh)

    def _replay(self, old_items: dict[Key, Obj], fresh: dict[Key, Obj]) -> None:
        for key, obj in fresh.items():
            old = old_items.get(key)
            if old is None:
                self._dispatch(ADDED, None, obj)
            elif version_of(old) != version_of(obj):
                self._dispatch(MODIFIED, old, obj)
        for key in sorted(set(old_items) - set(fresh)):
            with self._lock:
                self._bury(_uid(old_items[key]))
            self._dispatch(DELETED, old_items[key], None)

    def _watch(self, stop: threading.Event) -> None:
        while not stop.is_set():
            events = self._api.watch(
                self.res, resource_version=self._rv, timeout=WATCH_TIMEOUT, stop=stop
            )
            self._apply_all(events, stop)

    def _apply_all(self, events: Iterable[Obj], stop: threading.Event) -> None:
        for event in events:
            if stop.is_set():
                return
            self._apply(event.get("type", ""), event.get("object") or {})

    def _apply(self, event_type: str, obj: Obj) -> None:
        if event_type == "ERROR":
            if obj.get("code") == 410:
                raise Gone(410, "Expired", obj.get("message", ""))
            raise ApiError(obj.get("code", 500), obj.get("reason", ""), obj.get("message", ""))
        rv = (obj.get("metadata") or {}).get("resourceVersion", "")
        if event_type == "BOOKMARK":
            self._rv = rv or self._rv
            return
        obj = self._typed(obj)
        key = key_of(obj)
        with self._lock:
            old = self._items.get(key)
            self._rv = rv or self._rv
            if event_type == DELETED:
                self._items.pop(key, None)
                self._bury(_uid(obj))
            elif old is not None and version_of(old) > version_of(obj):
                return  # we already hold a newer copy (written through)
            else:
                self._items[key] = obj
        if event_type == DELETED:
            self._dispatch(DELETED, old or obj, None)
        else:
            self._dispatch(MODIFIED if old is not None else ADDED, old, obj)

    def _bury(self, uid: str) -> None:
        now = time.monotonic()
        self._tombstones = {u: t for u, t in self._tombstones.items() if now - t < TOMBSTONE_TTL}
        if uid:
            self._tombstones[uid] = now

    def _typed(self, obj: Obj) -> Obj:
        obj.setdefault("apiVersion", self.res.api_version)
        obj.setdefault("kind", self.res.kind)
        return obj

    def _dispatch(self, event: str, old: Obj | None, new: Obj | None) -> None:
        for handler in self._handlers:
            try:
                handler(event, old, new)
            except Exception as err:
                self._on_error(f"handler of {self.res.plural}: {err!r}")
