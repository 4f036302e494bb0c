"""A scripted REST client for the list+watch tests: each LIST and each watch answers with the
next item of its script (an answer, or an exception to raise), and every watch request's
version is kept. When the watch script runs out, the loop's stop event is set (and the
stream is empty), so ``run()`` returns. The same code against the real apiserver is tested
in tests/cluster/test_local.py. Used by tests/ctrl and tests/observe.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from mochaos.ctrl.rest import Kind, Obj

Script = list[Any]


def obj(name: str, rv: int, **labels: str) -> Obj:
    """A minimal object at resourceVersion ``rv``."""
    return {"metadata": {"name": name, "resourceVersion": str(rv), "labels": labels}}


def listed(rv: int, *items: Obj) -> Obj:
    """A List answer at collection version ``rv``."""
    return {"metadata": {"resourceVersion": str(rv)}, "items": list(items)}


class Stream:
    """A watch stream of scripted events; an Exception among them is raised there."""

    def __init__(self, events: list[Any], block: threading.Event | None = None) -> None:
        self._events = events
        self._block = block
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[tuple[str, Obj]]:
        for event in self._events:
            if isinstance(event, BaseException):
                raise event
            yield event
        if self._block is not None:  # a read that blocks until close()
            self.closed.wait()

    def close(self) -> None:
        """Ends a blocked read."""
        self.closed.set()


class ScriptedKube:
    """Answers LISTs and watches from scripts; see the module docstring."""

    def __init__(self, *, lists: Script, watches: Script, stop: threading.Event) -> None:
        self.lists = list(lists)
        self.watches = list(watches)
        self.stop = stop
        self.watched_from: list[str] = []
        self.streams: list[Stream] = []

    def list(self, kind: Kind, namespace: str, **_: Any) -> Obj:
        """The next LIST answer."""
        answer = self.lists.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def watch(self, kind: Kind, namespace: str, *, resource_version: str, **_: Any) -> Stream:
        """The next watch: a Stream of its events, or its exception raised."""
        self.watched_from.append(resource_version)
        if not self.watches:
            self.stop.set()
            return Stream([])
        answer = self.watches.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        stream = answer if isinstance(answer, Stream) else Stream(answer)
        self.streams.append(stream)
        return stream
