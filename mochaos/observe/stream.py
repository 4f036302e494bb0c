"""The history on disk while it is recorded: nothing lost when the run is killed.

A background writer appends the recorder's new entries to ``history.jsonl`` in the
test's report folder at most every :data:`FLUSH_PERIOD` seconds, each batch in whole
lines written at once, so the file is valid JSON lines up to the last batch even after
a kill -9, an OOM kill or a CI timeout. An entry changed after it was written (an
action whose window was verified) is appended again; a later line with the same
``seq`` supersedes the earlier one (:meth:`mochaos.observe.history.History.from_jsonl`). This
writer is the only owner of the file.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from mochaos.observe.history import Entry, entry_to_dict

FLUSH_PERIOD = 0.1
"""Seconds between two batches: at most this much history is lost when the run is killed."""


class HistoryStream:
    """Appends a growing list of entries to one file from a background thread."""

    def __init__(self, path: Path, *, period: float = FLUSH_PERIOD) -> None:
        self.path = path
        self._period = period
        self._fd: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._source: Callable[[int], tuple[Sequence[Entry], int]] | None = None
        self.written = 0
        """Entries written so far (each counted once, however often it was rewritten)."""

    def start(self, source: Callable[[int], tuple[Sequence[Entry], int]]) -> None:
        """Start writing; ``source(n)`` returns the entries to append now, given that ``n``
        were written, and the new count (the recorder's lock is taken inside it)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        self._source = source
        self._thread = threading.Thread(target=self._run, name="history-stream", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            self._flush()
        self._flush()

    def _flush(self) -> None:
        if self._fd is None or self._source is None:
            return
        entries, self.written = self._source(self.written)
        if not entries:
            return
        data = "".join(json.dumps(entry_to_dict(e), sort_keys=True) + "\n" for e in entries)
        view = memoryview(data.encode())
        while view:
            view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        """Write the rest and close the file (idempotent)."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join(timeout=10)
            self._thread = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
