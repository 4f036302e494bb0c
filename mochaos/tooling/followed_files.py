"""Following and reading the files processes write as they run: logs, journals.

A reader follows a growing file from its start, a whole line at a time, until told to stop;
the operators' log readers and the recorder's follower of the interposer's journal share it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path


def log_size(path: Path) -> int:
    """The size of a log file in bytes (0 when there is none yet)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_lines(path: Path, offset: int = 0) -> list[str]:
    """The lines of a log file from byte ``offset`` on (empty when there is no log yet)."""
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            return fh.read().decode(errors="replace").splitlines()
    except OSError:
        return []


def tail(lines: list[str], n: int) -> str:
    """The last ``n`` non-empty lines, joined for a one-line message."""
    return " | ".join([ln for ln in lines if ln.strip()][-n:])


def follow_file(path: Path, stop: threading.Event) -> Iterator[str]:
    """Yield a growing file's complete lines from its start until ``stop`` is set."""
    while not path.exists():
        if stop.wait(0.05):
            return
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        buf = ""
        while True:
            chunk = fh.readline()
            if chunk:
                buf += chunk
                if buf.endswith("\n"):
                    yield buf.rstrip("\n")
                    buf = ""
                continue
            if stop.wait(0.05):
                return
