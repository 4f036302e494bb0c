"""An informer: the cache of one kind in one namespace, kept by a list+watch, with handlers.

It hands out deep copies, like a controller-runtime cached client, and calls every handler
with ``(event, old, new)`` for each change; see :class:`Informer`. The reference model's
reconcilers read and follow the cluster through it.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable

from mochaos.ctrl.listwatch import (
    ADDED,
    DELETED,
    MODIFIED,
    Event,
    ListWatch,
)
from mochaos.ctrl.objects import labels_of
from mochaos.ctrl.rest import Kind, Kube, Obj

Handler = Callable[[str, Obj | None, Obj | None], None]

__all__ = ["ADDED", "DELETED", "MODIFIED", "Handler", "Informer"]


class Informer:
    """The cache of one kind.

    ``old`` is None on ADDED, ``new`` is None on DELETED (``old`` is then the last known
    state, as client-go hands it); ADDED and MODIFIED follow the cache (an object the cache
    did not hold is ADDED). The list+watch underneath (:class:`ListWatch`) resumes expired
    watches, relists after 410 Gone and replays the difference as events, and reconnects
    after errors, each reported to ``on_error``.
    """

    def __init__(
        self,
        kube: Kube,
        kind: Kind,
        namespace: str,
        *,
        stop: threading.Event,
        on_error: Callable[[str], None],
    ) -> None:
        """``stop``: set to end :meth:`run` (and the watch it holds open)."""
        self.kind = kind
        self._on_error = on_error
        self._handlers: list[Handler] = []
        self._lw = ListWatch(
            kube,
            kind,
            namespace,
            handle=self._dispatch,
            stop=stop,
            on_retry=lambda err: on_error(f"list+watch {kind.plural}: {err}"),
        )
        self.synced = threading.Event()

    def add_handler(self, handler: Handler) -> None:
        """Call ``handler(event, old, new)`` for every change (register before :meth:`run`)."""
        self._handlers.append(handler)

    def get(self, name: str) -> Obj | None:
        """A copy of the cached object, or None when the cache does not have it."""
        with self._lw.lock:
            obj = self._lw.known.get(name)
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
        with self._lw.lock:
            items = [self._lw.known[k] for k in sorted(self._lw.known)]
        out = []
        for obj in items:
            if labels and any(labels_of(obj).get(k) != v for k, v in labels.items()):
                continue
            if where is not None and not where(obj):
                continue
            out.append(copy.deepcopy(obj))
        return out

    def run(self) -> None:
        """Thread body: list (again until it answers), then watch until ``stop`` is set."""
        if self._lw.sync():
            self.synced.set()
            self._lw.run()

    def _dispatch(self, event: Event) -> None:
        if event.type == DELETED:
            args = (DELETED, event.old or event.obj, None)
        else:
            args = (ADDED if event.old is None else MODIFIED, event.old, event.obj)
        for handler in self._handlers:
            try:
                handler(*args)
            except Exception as err:
                self._on_error(f"handler of {self.kind.plural}: {err!r}")
