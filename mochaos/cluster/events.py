"""The local cluster's events file: one JSON line per restart of one of its processes.

The supervisor appends; the recorder follows the file during a scenario and turns each
line into a history marker, so a restart shows on the timeline and in the findings.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

EVENTS_FILE = "events.jsonl"
"""Name of the file in the cluster's folder."""


@dataclass(frozen=True)
class ClusterEvent:
    """One restart (or failed restart) of a component or double of the cluster."""

    t: float
    component: str
    event: str
    """``restarted`` or ``restart-failed``."""
    old_pid: int | None
    new_pid: int | None
    exit: str
    """How the old process ended (``exit status 1``, ``killed by SIGKILL``, ...)."""
    reason: str = ""
    """The last line the old process logged."""
    attempt: int = 1
    """Consecutive restarts of this component (the back-off's attempt number)."""
    delay: float = 0.0
    """Seconds the back-off waited before this restart."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, with a readable UTC ``time`` next to ``t``."""
        return {"time": datetime.fromtimestamp(self.t, UTC).isoformat(), **asdict(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClusterEvent:
        """Inverse of :meth:`to_dict` (unknown keys ignored)."""
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})

    def describe(self) -> str:
        """One line for a timeline row or a finding."""
        what = (
            f"{self.component} restarted (pid {self.old_pid} → {self.new_pid})"
            if self.event == "restarted"
            else f"{self.component} could not be restarted (pid {self.old_pid})"
        )
        reason = f"; last log: {self.reason}" if self.reason else ""
        return f"cluster: {what}: {self.exit}{reason}"


def append(path: Path, event: ClusterEvent) -> None:
    """Append one event as one line in one write (a reader sees whole lines only)."""
    line = (json.dumps(event.to_dict(), sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read(path: Path) -> list[ClusterEvent]:
    """Every whole event line of the file ([] when it does not exist)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [ClusterEvent.from_dict(json.loads(ln)) for ln in text.splitlines() if ln.strip()]


def follow(path: Path, stop: threading.Event, *, poll: float = 0.2) -> Iterator[ClusterEvent]:
    """Yield the events appended to ``path`` from now on, until ``stop`` is set."""
    try:
        offset = path.stat().st_size
    except OSError:
        offset = 0
    while not stop.is_set():
        try:
            with path.open("rb") as fh:
                fh.seek(offset)
                chunk = fh.read()
        except OSError:
            chunk = b""
        whole = chunk[: chunk.rfind(b"\n") + 1]
        offset += len(whole)
        for line in whole.decode(errors="replace").splitlines():
            if line.strip():
                yield ClusterEvent.from_dict(json.loads(line))
        stop.wait(poll)
