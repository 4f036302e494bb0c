"""Structured JSON logs in the shape of the operator's zap production encoder.

One object per line — ``level``, ``ts``, ``caller`` (the operator line it models), ``msg``
(the operator's exact text), then ``controller``, ``namespace``, ``name`` and the step's
keys — flushed per line so a tailer can follow the file live.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from typing import Any, TextIO


class LogSink:
    """A thread-safe, line-flushed writer of JSON log lines."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        """Write one record as a JSON line and flush it."""
        line = json.dumps(record, default=str, ensure_ascii=False)
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()

    def close(self) -> None:
        """Flush (the stream is closed by whoever opened it)."""
        with self._lock:
            self._stream.flush()


class Logger:
    """A logger with bound key/value pairs, like logr's ``WithValues``."""

    def __init__(self, sink: LogSink, **bound: Any) -> None:
        self._sink = sink
        self._bound = bound

    def with_values(self, **fields: Any) -> Logger:
        """A logger that adds ``fields`` to every line."""
        return Logger(self._sink, **{**self._bound, **fields})

    def info(self, msg: str, *, caller: str, **fields: Any) -> None:
        """An Info line."""
        self._emit("info", msg, caller, fields)

    def error(self, msg: str, *, caller: str, error: str, **fields: Any) -> None:
        """An Error line; ``error`` carries the error text (``msg`` may be a stack)."""
        self._emit("error", msg, caller, {**fields, "error": error})

    def _emit(self, level: str, msg: str, caller: str, fields: dict[str, Any]) -> None:
        ts = datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        record = {"level": level, "ts": ts, "caller": caller, "msg": msg}
        record.update(self._bound)
        record.update(fields)
        self._sink.write(record)
