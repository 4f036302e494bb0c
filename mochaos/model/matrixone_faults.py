"""The model's MatrixOne made unreachable by a scenario, and brought back.

The model plays MatrixOne itself (:mod:`.hakeeper`): its calls succeed at once. A scenario's
MatrixOne fault (mochaos.faults) takes one of its components down: the model's target
writes ``{component: how}`` into a small JSON file (``--matrixone-faults``) that the model
reads before each call to MatrixOne (:func:`write_fault`, :class:`Faults`). A call to a
component that is down fails as the operator's morpc client fails
(mochaos.ctrl.mo_components): at once when it is refused; when it hangs, after ``hang``
seconds — for HAKeeper its client's discovery timeout: the fault cut its connection, so
every call first waits for a discovery nobody answers — or as soon as the component is back
(the connection the hang held is reset then). The model plays HAKeeper only: its query
services are the score annotation the scenario writes, and it has no lock service
(docs/model-vs-real.md).
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from mochaos.ctrl.mo_components import HANG

POLL = 0.1
"""Seconds between two looks at the file while a call hangs."""


class Unreachable(Exception):
    """A call to a MatrixOne component that is down (what the operator's client returns)."""


class Faults:
    """The components of the model's MatrixOne that are down now, read from ``path`` (None:
    never any). The file is read again only when it changed."""

    def __init__(self, path: Path | None, *, hang: float) -> None:
        self.path = path
        self.hang = hang
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None
        self._down: dict[str, str] = {}

    def how(self, component: str) -> str | None:
        """How ``component`` is down (refuse, hang), or None when it is up."""
        if self.path is None:
            return None
        try:
            st = self.path.stat()
        except OSError:
            return None
        with self._lock:
            if self._seen != (st.st_mtime_ns, st.st_size):
                try:
                    data = json.loads(self.path.read_text() or "{}")
                except (OSError, ValueError):
                    return self._down.get(component)  # a writer mid-rename: the last known
                self._down = {str(k): str(v) for k, v in data.items()}
                self._seen = (st.st_mtime_ns, st.st_size)
            return self._down.get(component)

    def call(self, component: str) -> None:
        """Stand for one call to ``component``: return when it is up; raise Unreachable
        at once when it refuses, after ``hang`` seconds (or once it is back) when it hangs."""
        how = self.how(component)
        if how is None:
            return
        if how != HANG:
            raise Unreachable(f"{component}: connection refused")
        deadline = time.monotonic() + self.hang
        while time.monotonic() < deadline:
            time.sleep(min(POLL, max(deadline - time.monotonic(), 0)))
            if self.how(component) is None:
                raise Unreachable(f"{component}: connection reset by peer")
        raise Unreachable(f"{component}: context deadline exceeded")


def write_fault(path: Path, component: str, how: str | None) -> None:
    """Take ``component`` down (``how``) or bring it back (None) in the fault file at
    ``path``: read, changed, written through a rename (the model never reads half a file)."""
    try:
        down = json.loads(path.read_text() or "{}")
    except (OSError, ValueError):
        down = {}
    if how is None:
        down.pop(component, None)
    else:
        down[component] = how
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(down, sort_keys=True))
    tmp.replace(path)
