"""The double's log: one JSON object per line, in the shape mo-chaos reads operator logs in.

Keys: ``ts`` (RFC3339, microseconds, UTC), ``level``, ``logger`` (``kruise-double``),
``controller`` (``cloneset``, ``statefulset``, ``volume-binder``, ``crds``), ``msg``, then
``namespace`` / ``name`` of the workload and the step's own keys (``pod``, ``action``…).
Every line is flushed at once so a tailer (the operator-log reader) follows it live.
"""

from __future__ import annotations

import json
import sys
import threading
from datetime import UTC, datetime
from typing import Any, TextIO

LOGGER = "kruise-double"


class Log:
    """A logger with bound fields (``with_values``), writing to one shared stream."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        lock: threading.Lock | None = None,
        **bound: Any,
    ) -> None:
        self._stream = stream or sys.stdout
        self._lock = lock or threading.Lock()
        self._bound = bound

    def with_values(self, **fields: Any) -> Log:
        """A logger adding ``fields`` to every line."""
        return Log(self._stream, lock=self._lock, **{**self._bound, **fields})

    def info(self, msg: str, **fields: Any) -> None:
        """An info line."""
        self._write("info", msg, fields)

    def warn(self, msg: str, **fields: Any) -> None:
        """A warning line."""
        self._write("warn", msg, fields)

    def error(self, msg: str, **fields: Any) -> None:
        """An error line."""
        self._write("error", msg, fields)

    def _write(self, level: str, msg: str, fields: dict[str, Any]) -> None:
        ts = datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        record = {"ts": ts, "level": level, "logger": LOGGER, **self._bound, "msg": msg, **fields}
        line = json.dumps(record, default=str, ensure_ascii=False)
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()
