"""Periods the operator could not act, as typed period entries in the history: a process it
depends on was down, or its own process was stopped.

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
inconclusive outcome (what each kind of period excuses: ``PeriodKind.excuse``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from mochaos.procs import stat_fields

PERIOD = 0.25
"""Seconds between two probes."""

Edge = Callable[..., object]
"""Records one end of a period: ``edge(edge, reason=…, t=…)`` with edge ``"start"`` or
``"end"`` (the recorder's :meth:`period`, bound to a kind and subject)."""
Check = Callable[[], str | None]
"""Why something is unavailable now (one line), or None when it is available."""


def watch(check: Check, *, edge: Edge, stop: threading.Event) -> None:
    """Probe ``check`` from now until ``stop``: at once, every :data:`PERIOD` seconds, and
    once more at ``stop``, so that what holds at either end of the watch is in the history
    however late a periodic probe runs. Record a start (at the probe's send time, with the
    check's reason) when it starts failing and an end when it passes again; a period still
    open at the last probe stays open."""
    since: float | None = None
    while True:
        last = stop.is_set()  # set before this probe: it is the last
        sent = time.time()
        try:
            why = check()
        except Exception as err:  # a probe that raises counts as a failed probe
            why = f"{type(err).__name__}: {err}"
        if why is None and since is not None:
            edge("end", t=time.time())
            since = None
        elif why is not None and since is None:
            since = sent
            edge("start", reason=why, t=sent)
        if last:
            return
        stop.wait(PERIOD)


def stopped(pid_of: Callable[[], int | None]) -> Check:
    """A check that fails while the process ``pid_of()`` names is stopped (state T)."""

    def check() -> str | None:
        pid = pid_of()
        fields = None if pid is None else stat_fields(pid)
        return str(pid) if fields is not None and fields[0] in ("T", "t") else None

    return check


def watch_freezes(pid_of: Callable[[], int | None], edge: Edge, stop: threading.Event) -> None:
    """:func:`watch` the operator's process for SIGSTOP (the subject: its pid when it stops)."""
    subject = {"pid": ""}

    def record(which: str, *, reason: str = "", t: float) -> None:
        if which == "start":
            subject["pid"] = reason
        edge(which, subject=subject["pid"], reason="SIGSTOP" if which == "start" else "", t=t)

    watch(stopped(pid_of), edge=record, stop=stop)
