"""Triggers: wait on the recorded state (never on a bare sleep) and keep the evidence.

Every wait returns a :class:`~mochaos.scenario._gate.Fired` that carries its predicate, so
whatever waited may gate a write with it (``trigger=``) and the gate can prove later that
the write landed while the predicate still held. A wait that times out is inconclusive (or
an infrastructure error when a dependency of the operator was down meanwhile).
"""

from __future__ import annotations

import time

from mochaos.errors import Inconclusive, InfraError
from mochaos.invariants.judged import dependency_outages, describe
from mochaos.observe.history import Entry, LogRecord
from mochaos.observe.recorder import Recorder
from mochaos.progress import phase
from mochaos.scenario._describe import describe_state, rv_at
from mochaos.scenario._gate import Fired
from mochaos.scenario._predicates import Predicate, name_of


class Triggers:
    """Waits on one recorder's history (``self.recorder``)."""

    recorder: Recorder

    def when(self, predicate: Predicate, *, timeout: float, what: str = "") -> Fired:
        """Wait until ``predicate`` holds on the recorded state; the :class:`Fired` it returns
        carries the predicate (pass it as ``trigger=`` to gate a write). Inconclusive, naming
        the last state seen, when it never holds within ``timeout`` wall seconds."""
        what = what or name_of(predicate)
        since = time.time()
        with phase(f"waiting for {what}"):
            got = self.recorder.wait_for(predicate, timeout=timeout)
            if got is None:
                self.recorder.check_healthy()
                self._blame_dependencies(since, what)
                raise Inconclusive(
                    f"not ready after {timeout:.0f}s: {what}; last state: "
                    f"{describe_state(self.recorder.snapshot())}"
                )
        entry, state = got
        return Fired(name=what, entry=entry, rv=rv_at(entry, state), predicate=predicate)

    def when_logged(
        self,
        msg: str,
        *,
        name: str | None = None,
        count: int = 1,
        timeout: float,
        holds: Predicate | None = None,
    ) -> Fired:
        """Wait until the operator logged ``msg`` (for object ``name``) ``count`` times. As a
        trigger it is an event (a write gated by it lands after the line); with ``holds`` it
        is also a state, re-checked just before the gated write."""
        seen: list[LogRecord] = []

        def matches(entry: Entry) -> bool:
            if isinstance(entry, LogRecord) and entry.msg == msg and name in (None, entry.name):
                seen.append(entry)
            return len(seen) >= count

        what = f"{count}× {msg!r}"
        since = time.time()
        with phase(f"waiting for the operator to log {what}"):
            entry = self.recorder.wait_for_entry(matches, timeout=timeout, since=0)
        if entry is None:
            self._blame_dependencies(since, f"the operator to log {what}")
            raise Inconclusive(
                f"not ready after {timeout:.0f}s: operator never logged {msg!r} {count}× "
                f"for {name or 'any object'}"
            )
        if holds is not None:
            what = f"{what} while {name_of(holds)}"
        return Fired(name=what, entry=entry, rv=None, predicate=holds)

    def _blame_dependencies(self, since: float, what: str) -> None:
        """InfraError naming the dependencies that were unavailable during a wait that timed
        out: it waited on them, not on the operator."""
        down = [p for p in dependency_outages(self.recorder.history()) if p.end >= since]
        if down:
            raise InfraError(
                f"not ready: {what}, while a dependency of the operator was unavailable: "
                f"{describe(down, time.time())}",
                hint="see the cluster's status (python -m mochaos cluster status) and its logs",
            )


class RecorderTriggers(Triggers):
    """Triggers on a recorder, for the parts of a scenario that wait (its topology)."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
