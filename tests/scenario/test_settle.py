"""Settle moves on as soon as the verdicts are certain, never before a liveness deadline.

A scripted recorder plays a hand-written history on the wall clock (times are seconds after
the start), so the checker's monitor and settle run exactly as in a scenario.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from invariants.builders import HistoryBuilder

from mochaos.config import CheckOptions
from mochaos.scenario.checker import Checker, RunInfo
from mochaos.types import Entry, History, Marker

OPTIONS = CheckOptions(finalize_timeout=2.0, retry_window=2.0, grace=0.5)
QUIET = 0.3


class ScriptedRecorder:
    """What the checker reads of a recorder, over entries revealed as their time comes."""

    def __init__(self, history: History) -> None:
        self.start = time.time()
        self._script = [replace(e, t=self.start + e.t) for e in history]
        self._extra: list[Entry] = []
        self._lock = threading.Lock()

    def _entries(self) -> list[Entry]:
        now = time.time()
        with self._lock:
            shown = [e for e in self._script if e.t <= now] + self._extra
        return sorted(shown, key=lambda e: e.seq)

    def journal(self, since: int = 0) -> tuple[list[Entry], int]:
        entries = self._entries()
        return entries[since:], len(entries)

    def history(self) -> History:
        return History(self._entries())

    def barrier(self, *, timeout: float = 10.0) -> None:
        """Every scripted entry is 'recorded' at its time: nothing to catch up."""

    def mark(self, label: str) -> Marker:
        with self._lock:
            seq = 10_000 + len(self._extra)
            marker = Marker(seq=seq, t=time.time(), label=label)
            self._extra.append(marker)
        return marker

    def wait_for_entry(self, match, *, timeout: float, since: int | None = None):
        time.sleep(min(timeout, 0.05))
        return None


def two_deletions(*, retrying: bool = False) -> History:
    """Claim a is deleted at 0 and stays (finalize deadline 2 s); claim b is deleted at 1 and
    stays too (deadline 3 s); with ``retrying``, b's Finalize runs every 0.2 s until 3.2 s."""
    h = HistoryBuilder()
    h.at(0.0).claim("a", phase="Bound", deleting=True)
    h.at(1.0).claim("b", phase="Bound", deleting=True)
    if retrying:
        for i in range(12):
            h.at(1.0 + 0.2 * i).log("finalize CNClaim", name="b")
    return h.build()


def settle(history: History, *, early: bool) -> tuple[float, set[str]]:
    """Seconds settle took from the start of the history, and the invariants that failed."""
    recorder = ScriptedRecorder(history)
    run = RunInfo(run_id="r", seed=1, options=OPTIONS)
    checker = Checker(recorder, run, namespace="chaos-test", operator_user_agent="x")  # type: ignore[arg-type]
    try:
        assert checker.settle(quiet=QUIET, timeout=10, early=early)
        took = time.time() - recorder.start
        result = checker.verdict(nodeid="t", missed=[])
    finally:
        checker.close()
    return took, {v.invariant for v in result.verdicts if v.failed}


def test_settle_stops_waiting_once_the_deadline_left_cannot_change_a_verdict():
    """a's deadline (2 s) fails finalizer-completes for good; b's (3 s) cannot change it."""
    early_took, early_failed = settle(two_deletions(), early=True)
    late_took, late_failed = settle(two_deletions(), early=False)
    assert early_failed == late_failed == {"finalizer-completes"}
    assert 2.0 <= early_took < 3.0 <= late_took


def test_a_deadline_no_verdict_has_decided_is_waited_out():
    """One claim stuck: settle waits for its finalize deadline, early or not."""
    h = HistoryBuilder()
    h.at(0.0).claim("a", phase="Bound", deleting=True)
    took, failed = settle(h.build(), early=True)
    assert took >= 2.0
    assert failed == {"finalizer-completes"}


def test_an_invariant_still_counting_keeps_settle_waiting():
    """b keeps retrying: retry-budget is open, so b's deadline is waited out as before."""
    early_took, early_failed = settle(two_deletions(retrying=True), early=True)
    late_took, late_failed = settle(two_deletions(retrying=True), early=False)
    assert early_failed == late_failed
    assert early_took >= 3.0 and late_took >= 3.0
