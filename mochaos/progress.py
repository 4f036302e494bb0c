"""Live progress of a run: the ``mochaos`` logger, scenario phases, and long steps.

Everything mo-chaos says while it works goes through the ``mochaos`` logger, so
``--log-cli-level=INFO`` shows it live. Two kinds of lines:

- *steps* (:func:`announce`): long work a user must not wait on in silence — a
  build, a cluster start, an image load. Always shown.
- *phases* (:func:`phase`): where a scenario is — cluster, operator install,
  topology ready, waiting for <state>, fault injected, settle, epilogue, verdict.
  Shown with ``-s`` or ``-v``; always recorded per test (:class:`PhaseLog`) so a
  failure names the phase it happened in.

Output capture would swallow lines printed during a test, and xdist workers have
no terminal of their own: the plugin gives this module a :class:`Sink` — the
terminal itself (a duplicate of stderr taken before capture starts) or, in a
worker, a shared file the controller follows and prints.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

LOGGER = logging.getLogger("mochaos")

ALWAYS = "mochaos_always"
"""Attribute of a log record that must reach the terminal whatever the verbosity."""


@dataclass
class PhaseRecord:
    """One finished (or failed) phase of a test."""

    name: str
    started: float
    seconds: float
    ok: bool


@dataclass
class PhaseLog:
    """The phases of the running test, in order; the last one is the current phase."""

    test: str
    records: list[PhaseRecord] = field(default_factory=list)
    current: str = "set-up"

    def summary(self) -> str:
        """One line per phase with its duration; the failed one marked."""
        return "\n".join(
            f"{'✗' if not r.ok else '✓'} {r.name} ({r.seconds:.1f} s)" for r in self.records
        )

    def to_list(self) -> list[dict[str, object]]:
        """JSON-able form for the test's result."""
        return [{"name": r.name, "seconds": round(r.seconds, 3), "ok": r.ok} for r in self.records]


_state = threading.local()
_active: PhaseLog | None = None
"""The running test's phases (one test at a time per process)."""


def begin_test(test: str) -> PhaseLog:
    """Start recording the phases of ``test``."""
    global _active
    _active = PhaseLog(test)
    return _active


def end_test() -> PhaseLog | None:
    """Stop recording; return the finished test's phases."""
    global _active
    log, _active = _active, None
    return log


def active() -> PhaseLog | None:
    """The running test's phases (None outside a test)."""
    return _active


def current_phase() -> str:
    """The phase the running test is in (``set-up`` before the first)."""
    return _active.current if _active else "set-up"


@contextlib.contextmanager
def detached() -> Iterator[None]:
    """Work of this thread that serves no running test (e.g. a namespace made ready ahead
    of the test that will use it): its phases are logged, never recorded in that test's."""
    was = getattr(_state, "detached", False)
    _state.detached = True
    try:
        yield
    finally:
        _state.detached = was


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Log and record a phase of the running test; an error inside names this phase."""
    log = None if getattr(_state, "detached", False) else _active
    depth = getattr(_state, "depth", 0)
    _state.depth = depth + 1
    if log is not None and depth == 0:
        log.current = name
    LOGGER.info("%s …", name)
    t0 = time.monotonic()
    ok = False
    try:
        yield
        ok = True
    except BaseException as err:
        if not hasattr(err, "mochaos_phase"):
            err.mochaos_phase = name  # type: ignore[attr-defined]
        raise
    finally:
        _state.depth = depth
        took = time.monotonic() - t0
        if log is not None and depth == 0:
            log.records.append(PhaseRecord(name, t0, took, ok))
        LOGGER.info("%s %s (%.1f s)", "done:" if ok else "FAILED:", name, took)


def announce(line: str) -> None:
    """A long step's progress: shown on the terminal whatever the verbosity."""
    LOGGER.info(line, extra={ALWAYS: True})


class Sink(logging.Handler):
    """Writes mo-chaos lines where the user sees them (see the module docstring)."""

    def __init__(
        self, stream: IO[str], *, prefix: str = "", verbose: bool = False, clock: bool = True
    ) -> None:
        super().__init__(logging.INFO)
        self._stream = stream
        self._prefix = prefix
        self.verbose = verbose
        self._clock = clock
        self._lock_out = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        """Write the line when it must always show or the run is verbose."""
        if not (getattr(record, ALWAYS, False) or self.verbose):
            return
        stamp = time.strftime("%H:%M:%S ", time.localtime(record.created)) if self._clock else ""
        test = f" [{_active.test}]" if _active and not getattr(record, ALWAYS, False) else ""
        message = record.getMessage().removeprefix("mo-chaos: ")
        line = f"{stamp}mo-chaos{self._prefix}{test}: {message}\n"
        with self._lock_out:
            try:
                self._stream.write(line)
                self._stream.flush()
            except (OSError, ValueError):
                pass


def terminal_stream() -> IO[str]:
    """A private copy of stderr, taken before output capture redirects it."""
    return os.fdopen(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")


def install(sink: Sink) -> Sink:
    """Route the ``mochaos`` logger's lines to ``sink`` (INFO and up)."""
    LOGGER.setLevel(logging.INFO)
    LOGGER.addHandler(sink)
    return sink


def uninstall(sink: Sink) -> None:
    """Detach ``sink`` again."""
    LOGGER.removeHandler(sink)
    sink.close()


class Follower:
    """Follows the workers' progress file and copies each line to the terminal."""

    def __init__(self, path: Path, stream: IO[str]) -> None:
        self._path = path
        self._stream = stream
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mochaos-progress", daemon=True)

    def start(self) -> None:
        """Start following (the file may not exist yet)."""
        self._thread.start()

    def _run(self) -> None:
        offset = 0
        while True:
            stopping = self._stop.wait(0.2)
            try:
                with self._path.open("rb") as fh:
                    fh.seek(offset)
                    chunk = fh.read()
            except OSError:
                chunk = b""
            # Only whole lines: a worker may be half-way through one.
            whole = chunk[: chunk.rfind(b"\n") + 1]
            offset += len(whole)
            if whole:
                with contextlib.suppress(OSError, ValueError):
                    self._stream.write(whole.decode("utf-8", errors="replace"))
                    self._stream.flush()
            if stopping:
                return

    def stop(self) -> None:
        """Copy what is left and stop."""
        self._stop.set()
        self._thread.join(timeout=5)
