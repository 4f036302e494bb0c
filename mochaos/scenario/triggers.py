"""Triggers: wait on the recorded state (never on a bare sleep) and keep the evidence.

A trigger returns :class:`~mochaos.scenario.actions.Fired`: the observation that made
its predicate true and, for a gate, the predicate itself, so the nemesis can prove
later that the fault landed while the trigger still held.
"""

from __future__ import annotations

import time

from mochaos.errors import Inconclusive, InfraError
from mochaos.invariants.judged import dependency_outages, describe
from mochaos.observe.history import Entry, LogRecord
from mochaos.observe.recorder import Recorder
from mochaos.progress import phase
from mochaos.scenario.actions import Fired
from mochaos.scenario.describe import describe_state, rv_at
from mochaos.scenario.predicates import Predicate, name_of


class Triggers:
    """Waits on one recorder's history."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder

    def wait(self, predicate: Predicate, *, timeout: float, what: str = "") -> Fired:
        """Wait for a state; Inconclusive (naming the last state) when it never comes."""
        what = what or name_of(predicate)
        since = time.time()
        with phase(f"waiting for {what}"):
            got = self._recorder.wait_for(predicate, timeout=timeout)
            if got is None:
                self._recorder.check_healthy()
                self._blame_dependencies(since, what)
                raise Inconclusive(
                    f"not ready after {timeout:.0f}s: {what}; last state: "
                    f"{describe_state(self._recorder.snapshot())}"
                )
        entry, state = got
        return Fired(name=what, entry=entry, rv=rv_at(entry, state))

    def _blame_dependencies(self, since: float, what: str) -> None:
        """InfraError naming the dependencies that were unavailable during a wait that timed
        out: it waited on them, not on the operator."""
        down = [p for p in dependency_outages(self._recorder.history()) if p.end >= since]
        if down:
            raise InfraError(
                f"not ready: {what}, while a dependency of the operator was unavailable: "
                f"{describe(down, time.time())}",
                hint="see the cluster's status (python -m mochaos cluster status) and its logs",
            )

    def when(self, predicate: Predicate, *, timeout: float) -> Fired:
        """Wait until ``predicate`` holds; its evidence gates the next fault."""
        fired = self.wait(predicate, timeout=timeout)
        return Fired(name=fired.name, entry=fired.entry, rv=fired.rv, predicate=predicate)

    def when_logged(
        self, msg: str, *, name: str | None = None, count: int = 1, timeout: float
    ) -> Fired:
        """Wait until the operator logged ``msg`` (for object ``name``) ``count`` times."""
        seen: list[LogRecord] = []

        def matches(entry: Entry) -> bool:
            if isinstance(entry, LogRecord) and entry.msg == msg and name in (None, entry.name):
                seen.append(entry)
            return len(seen) >= count

        what = f"{count}× {msg!r}"
        since = time.time()
        with phase(f"waiting for the operator to log {what}"):
            entry = self._recorder.wait_for_entry(matches, timeout=timeout, since=0)
        if entry is None:
            self._blame_dependencies(since, f"the operator to log {what}")
            raise Inconclusive(
                f"not ready after {timeout:.0f}s: operator never logged {msg!r} {count}× "
                f"for {name or 'any object'}"
            )
        return Fired(name=what, entry=entry, rv=None)
