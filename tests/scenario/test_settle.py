"""Settling: the set-up waits for the operator's pass after each bind; settle moves on as
soon as the verdicts are certain, never before a liveness deadline.

A scripted recorder plays a hand-written history on the wall clock (times are seconds after
the start), so the checker's monitor and settle, and the workload's waits, run exactly as
in a scenario.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from mochaos.config import CheckOptions
from mochaos.ctrl.rest import Kube
from mochaos.errors import Inconclusive
from mochaos.observe.history import Entry, History, Marker
from mochaos.operator.target import Waits
from mochaos.scenario._checker import Checker, RunInfo
from mochaos.scenario._gate import Gate
from mochaos.scenario._topology import BIND_REQUEUE, SYNC_QUIET, Topology
from mochaos.scenario._writes import CHAOS, Writes

from support.builders import HistoryBuilder

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
        """The first entry from ``since`` on (default: none of the past) that matches."""
        deadline = time.monotonic() + timeout
        seen = len(self._entries()) if since is None else since
        while True:
            entries = self._entries()
            for entry in entries[seen:]:
                if match(entry):
                    return entry
            seen = len(entries)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)


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


# -- the set-up: claims settled after their bind ----------------------------------------

SCALE = 0.1
"""Operator seconds to wall seconds: the bind requeue (5 s) is half a second."""


class Operator:
    """What the workload reads of a running operator."""

    waits = Waits(bind=1.5)
    pool_spec = None
    sessions = None


def settled_after(kube, namespace: str, run_id: str, history: History) -> float:
    """Seconds ``Topology.settled(["z"])`` took over ``history`` played from now."""
    recorder = ScriptedRecorder(history)
    writes = Writes(Kube(kube.configuration, user_agent=CHAOS), namespace=namespace,
                    run_id=run_id, recorder=recorder, gate=Gate(recorder),  # type: ignore[arg-type]
                    operator=None, component="chaos")  # fmt: skip
    topology = Topology(
        writes, recorder=recorder, triggers=None, operator=Operator(),  # type: ignore[arg-type]
        run_id=run_id, options=CheckOptions(time_scale=SCALE),
    )  # fmt: skip
    topology.settled(["z"])
    return time.time() - recorder.start


SYNCED = "object is synced, reconcile will be triggered on next change or resync"


def test_the_set_up_waits_for_the_pass_that_follows_the_bind_local(kube, namespace, mochaos):
    """z's own writes bring a pass at once, its requeue another 5 s (0.5 s here) later:
    settled once that one is SYNC_QUIET ago."""
    requeue, quiet = BIND_REQUEUE * SCALE, SYNC_QUIET * SCALE
    h = HistoryBuilder()
    h.at(0.0).claim("z", phase="Bound", pod="b")
    h.at(0.05).log(SYNCED, name="z")
    h.at(requeue + 0.2).log(SYNCED, name="z")
    took = settled_after(kube, namespace, mochaos.run_id, h.build())
    assert requeue + 0.2 + quiet <= took < requeue + 0.2 + quiet + 0.6


def test_without_a_later_pass_the_requeue_time_is_enough_local(kube, namespace, mochaos):
    """A bind whose status write conflicted is retried after 2 s instead, and no requeue
    pass follows: the claim is settled once the requeue time has passed."""
    requeue = BIND_REQUEUE * SCALE
    h = HistoryBuilder()
    h.at(0.0).claim("z", phase="Bound", pod="b")
    h.at(0.05).log(SYNCED, name="z")
    took = settled_after(kube, namespace, mochaos.run_id, h.build())
    assert requeue + SYNC_QUIET * SCALE <= took < requeue + SYNC_QUIET * SCALE + 0.6


def test_a_claim_the_operator_keeps_passing_over_is_inconclusive_local(kube, namespace, mochaos):
    h = HistoryBuilder()
    h.at(0.0).claim("z", phase="Bound", pod="b")
    for i in range(40):
        h.at(0.1 * i).log("pod is not in normal state, wait", name="z")
    with pytest.raises(Inconclusive, match="kept passing over claim"):
        settled_after(kube, namespace, mochaos.run_id, h.build())
