"""A list+watch informer for one kind in one namespace: the reconcilers' cache.

It calls every handler with ``(event, old, new)`` for each change and hands out deep copies,
like a controller-runtime cached client; see :class:`Informer`.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable

from tenacity import retry, retry_if_exception_type, wait_exponential

from mochaos.model.kube import ApiError, Gone, Kind, Kube, Obj
from mochaos.model.objects import labels_of, name_of

Handler = Callable[[str, Obj | None, Obj | None], None]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

WATCH_TIMEOUT = 60


class Informer:
    """The cache of one kind.

    It lists, then watches from the list's resourceVersion. ``old`` is None on ADDED,
    ``new`` is None on DELETED (``old`` is then the last known state, as client-go hands
    it). A watch that expires is resumed from the last version seen; 410 Gone triggers a
    new list, whose differences to the cache are replayed as events.
    """

    def __init__(
        self, kube: Kube, kind: Kind, namespace: str, *, on_error: Callable[[str], None]
    ) -> None:
        self.kind = kind
        self._kube = kube
        self._namespace = namespace
        self._on_error = on_error
        self._items: dict[str, Obj] = {}
        self._lock = threading.RLock()
        self._handlers: list[Handler] = []
        self._rv = ""
        self.synced = threading.Event()

    def add_handler(self, handler: Handler) -> None:
        """Call ``handler(event, old, new)`` for every change (register before :meth:`run`)."""
        self._handlers.append(handler)

    def get(self, name: str) -> Obj | None:
        """A copy of the cached object, or None when the cache does not have it."""
        with self._lock:
            obj = self._items.get(name)
            return copy.deepcopy(obj) if obj is not None else None

    def list(
        self,
        *,
        labels: dict[str, str] | None = None,
        where: Callable[[Obj], bool] | None = None,
    ) -> list[Obj]:
        """Copies of the cached objects whose labels include ``labels`` and that pass
        ``where``, in name order (Go's cache order is unspecified; name order is stable).
        """
        with self._lock:
            items = [self._items[k] for k in sorted(self._items)]
        out = []
        for obj in items:
            if labels and any(labels_of(obj).get(k) != v for k, v in labels.items()):
                continue
            if where is not None and not where(obj):
                continue
            out.append(copy.deepcopy(obj))
        return out

    def run(self, stop: threading.Event) -> None:
        """Thread body: list, then watch until ``stop`` is set."""
        while not stop.is_set():
            try:
                self._relist(stop)
                self.synced.set()
                self._watch(stop)
            except Gone:
                continue
            except Exception as err:
                if not stop.is_set():
                    self._on_error(f"watch {self.kind.plural}: {err}")
                    stop.wait(0.5)

    @retry(
        retry=retry_if_exception_type((ApiError, OSError)),
        wait=wait_exponential(multiplier=0.1, max=5),
    )
    def _list_once(self) -> Obj:
        return self._kube.list(self.kind, self._namespace)

    def _relist(self, stop: threading.Event) -> None:
        listed = self._list_once()
        fresh = {name_of(o): self._typed(o) for o in listed.get("items", [])}
        with self._lock:
            old_items = self._items
            self._items = dict(fresh)
            self._rv = listed["metadata"]["resourceVersion"]
        for name, obj in fresh.items():
            old = old_items.get(name)
            if old is None:
                self._dispatch(ADDED, None, obj)
            elif old["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                self._dispatch(MODIFIED, old, obj)
        for name, old in old_items.items():
            if name not in fresh:
                self._dispatch(DELETED, old, None)

    def _watch(self, stop: threading.Event) -> None:
        while not stop.is_set():
            stream = self._kube.watch(
                self.kind, self._namespace, resource_version=self._rv, timeout_seconds=WATCH_TIMEOUT
            )
            for event_type, obj in stream:
                if stop.is_set():
                    return
                self._apply(event_type, obj)

    def _apply(self, event_type: str, obj: Obj) -> None:
        if event_type == "ERROR":
            if obj.get("code") == 410:
                raise Gone(410, "Expired", obj.get("message", ""))
            raise ApiError(obj.get("code", 500), obj.get("reason", ""), obj.get("message", ""))
        rv = obj.get("metadata", {}).get("resourceVersion", "")
        if event_type == "BOOKMARK":
            self._rv = rv or self._rv
            return
        obj = self._typed(obj)
        name = name_of(obj)
        with self._lock:
            old = self._items.get(name)
            if event_type == DELETED:
                self._items.pop(name, None)
            else:
                self._items[name] = obj
            self._rv = rv or self._rv
        if event_type == DELETED:
            self._dispatch(DELETED, old or obj, None)
        elif old is None:
            self._dispatch(ADDED, None, obj)
        else:
            self._dispatch(MODIFIED, old, obj)

    def _typed(self, obj: Obj) -> Obj:
        obj.setdefault("apiVersion", self.kind.api_version)
        obj.setdefault("kind", self.kind.kind)
        return obj

    def _dispatch(self, event: str, old: Obj | None, new: Obj | None) -> None:
        for handler in self._handlers:
            try:
                handler(event, old, new)
            except Exception as err:
                self._on_error(f"handler of {self.kind.plural}: {err!r}")
