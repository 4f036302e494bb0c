"""Periods the operator could not act, as marker pairs in the history: a process it depends
on was down, or its own process was stopped.

- A *dependency* (the MatrixOne double, the workload controller: what the local cluster
  runs beside the control plane) is probed every :data:`PERIOD` seconds; a failed probe
  starts an outage (at the moment it was sent), the next good one ends it. While one is
  down, the operator's writes through it fail closed: a violation then is not its verdict.
- The operator's *process* is looked at every :data:`PERIOD` seconds; a stopped process
  (SIGSTOP: the framework's pause fault, or someone outside it) starts a freeze, a running
  one ends it, so that the window is known either way.

The invariants judge on a clock that leaves these periods out (:mod:`mochaos.invariants.
judged`); the checker turns violations seen with a dependency down into an
infrastructure error and those seen with a freeze the framework did not make into an
inconclusive outcome.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from mochaos.observe.history import (
    DEPENDENCY_AVAILABLE,
    DEPENDENCY_UNAVAILABLE,
    OPERATOR_FROZEN,
    OPERATOR_THAWED,
)
from mochaos.procs import stat_fields

PERIOD = 0.25
"""Seconds between two probes."""

Mark = Callable[[str, float], None]
"""Records a marker: (label, time)."""
Check = Callable[[], str | None]
"""Why something is unavailable now (one line), or None when it is available."""


def watch(
    check: Check,
    *,
    down: Callable[[str], str],
    up: Callable[[float], str],
    mark: Mark,
    stop: threading.Event,
) -> None:
    """Probe ``check`` from now until ``stop``: at once, every :data:`PERIOD` seconds, and
    once more at ``stop``, so that what holds at either end of the watch is in the history
    however late a periodic probe runs. Mark ``down(why)`` when it starts failing (at the
    probe's send time) and ``up(seconds)`` when it passes again; a period still open at
    the last probe stays open."""
    since: float | None = None
    while True:
        last = stop.is_set()  # set before this probe: it is the last
        sent = time.time()
        try:
            why = check()
        except Exception as err:  # a probe that raises counts as a failed probe
            why = f"{type(err).__name__}: {err}"
        if why is None and since is not None:
            now = time.time()
            mark(up(now - since), now)
            since = None
        elif why is not None and since is None:
            since = sent
            mark(down(why), sent)
        if last:
            return
        stop.wait(PERIOD)


def watch_dependency(name: str, check: Check, mark: Mark, stop: threading.Event) -> None:
    """:func:`watch` one dependency, with its name in the markers."""
    watch(
        check, mark=mark, stop=stop,
        down=lambda why: f"{DEPENDENCY_UNAVAILABLE}: {name} ({why})",
        up=lambda seconds: f"{DEPENDENCY_AVAILABLE}: {name} after {seconds:.1f}s",
    )  # fmt: skip


def stopped(pid_of: Callable[[], int | None]) -> Check:
    """A check that fails while the process ``pid_of()`` names is stopped (state T)."""

    def check() -> str | None:
        pid = pid_of()
        fields = None if pid is None else stat_fields(pid)
        return str(pid) if fields is not None and fields[0] in ("T", "t") else None

    return check


def watch_freezes(pid_of: Callable[[], int | None], mark: Mark, stop: threading.Event) -> None:
    """:func:`watch` the operator's process for SIGSTOP."""
    watch(
        stopped(pid_of), mark=mark, stop=stop,
        down=lambda pid: f"{OPERATOR_FROZEN}: {pid} (SIGSTOP)",
        up=lambda seconds: f"{OPERATOR_THAWED} after {seconds:.1f}s",
    )  # fmt: skip
