"""Violations seen while a dependency of the operator was down are an infrastructure error
naming it; seen while someone other than the framework had the operator's process stopped,
inconclusive; with the framework's own pause fault, the verdict stands. A MatrixOne
component the scenario made unreachable is no dependency down: what the operator does
meanwhile is its verdict."""

from __future__ import annotations

import time

import pytest

from mochaos.config import CheckOptions
from mochaos.errors import Inconclusive, InfraError
from mochaos.invariants.judged import OperatorClock
from mochaos.observe.history import (
    DEPENDENCY_OUTAGE,
    MATRIXONE_FAULT,
    OPERATOR_FREEZE,
    History,
    PeriodKind,
    State,
)
from mochaos.scenario._checker import Checker, RunInfo, not_the_operators
from mochaos.scenario._triggers import RecorderTriggers

from support.builders import HistoryBuilder, ticks

OPTIONS = CheckOptions(converge_timeout=60)


def never_converges(b: HistoryBuilder) -> HistoryBuilder:
    """S1 asks for 2 replicas and never gets them (replicas-converge fails)."""
    b.at(0).claimset("S1", replicas=2, status_replicas=0, ready=0)
    ticks(b, 1, 200, every=5)
    return b


def build(b: HistoryBuilder) -> History:
    return History(sorted(b.entries, key=lambda e: e.t))


class FakeRecorder:
    """What the checker reads of a recorder, over a finished history."""

    def __init__(self, history: History) -> None:
        self._entries = list(history)

    def journal(self, cursor: int):
        return self._entries[cursor:], len(self._entries)

    def history(self) -> History:
        return History(self._entries)


def outcome(history: History) -> tuple[str, str]:
    checker = Checker(FakeRecorder(history), RunInfo(run_id="r", seed=1, options=OPTIONS),
                      namespace="ns", operator_user_agent="op")  # fmt: skip
    result = checker.verdict(nodeid="t", missed=[])
    return result.outcome, result.message.splitlines()[0]


def test_without_excuse_the_violation_is_the_operators():
    assert outcome(build(never_converges(HistoryBuilder())))[0] == "failed"
    assert not_the_operators(build(never_converges(HistoryBuilder()))) is None


def test_a_dependency_down_makes_it_an_infrastructure_error_naming_it():
    b = never_converges(HistoryBuilder())
    b.at(150).period(DEPENDENCY_OUTAGE, "start", "matrixone", "not running")
    b.at(170).period(DEPENDENCY_OUTAGE, "end", "matrixone")
    got, first = outcome(build(b))
    assert got == "error"
    assert first.startswith("INFRASTRUCTURE: a dependency of the operator was unavailable "
                            "during the scenario: matrixone for 20.0s (not running)")  # fmt: skip


def _down(kind: PeriodKind, subject: str) -> History:
    """The same 20 s of MatrixOne's ``subject`` unreachable, typed as ``kind``."""
    b = never_converges(HistoryBuilder())
    b.at(150).period(kind, "start", subject, "refuse")
    b.at(170).period(kind, "end", subject)
    return build(b)


def test_a_matrixone_fault_the_scenario_injected_is_judged_an_outage_of_the_double_is_not():
    # green: the scenario made HAKeeper unreachable — the violation is the operator's
    injected = _down(MATRIXONE_FAULT, "hakeeper")
    assert not_the_operators(injected) is None
    assert outcome(injected)[0] == "failed"
    # red: the double itself was down (no scenario made it so) — an infrastructure error
    outage = _down(DEPENDENCY_OUTAGE, "matrixone")
    assert outcome(outage)[0] == "error"
    # and the operator's deadlines run on through the fault, not through the outage
    assert OperatorClock.of(injected).outages == ()
    assert OperatorClock.of(outage).outages == ((150.0, 170.0),)


def test_an_outside_freeze_makes_it_inconclusive():
    b = never_converges(HistoryBuilder())
    b.at(100).period(OPERATOR_FREEZE, "start", "4242", "SIGSTOP")
    b.at(108).period(OPERATOR_FREEZE, "end", "4242")
    got, first = outcome(build(b))
    assert got == "inconclusive" and "pid 4242 for 8.0s" in first, first


def test_the_frameworks_own_pause_leaves_the_verdict_standing():
    b = never_converges(HistoryBuilder())
    b.at(100).action("pause_operator", kind="Operator", name="operator", params={"seconds": 8})
    b.at(100.2).period(OPERATOR_FREEZE, "start", "4242", "SIGSTOP")
    b.at(108.1).period(OPERATOR_FREEZE, "end", "4242")
    assert outcome(build(b))[0] == "failed"


class TimedOut(FakeRecorder):
    """A recorder whose waits time out (nothing the scenario waits for happens)."""

    def wait_for(self, predicate, *, timeout):
        return None

    def check_healthy(self) -> None:
        pass

    def snapshot(self) -> State:
        return State()


def test_a_wait_that_timed_out_while_a_dependency_was_down_names_it():
    now = time.time()
    b = HistoryBuilder()
    b.at(now - 1).period(DEPENDENCY_OUTAGE, "start", "kruise", "not running")
    with pytest.raises(
        InfraError,
        match=r"while a dependency of the operator was unavailable: "
        r"kruise for \d+s and not back \(not running\)",
    ):
        RecorderTriggers(TimedOut(b.build())).when(lambda s: False, timeout=0.1, what="two pods")
    with pytest.raises(Inconclusive, match="not ready after 0s: two pods"):
        RecorderTriggers(TimedOut(History())).when(lambda s: False, timeout=0.1, what="two pods")
    # a wait that timed out while the scenario held HAKeeper down is on the operator
    b = HistoryBuilder()
    b.at(now - 1).period(MATRIXONE_FAULT, "start", "hakeeper", "hang")
    with pytest.raises(Inconclusive, match="not ready after 0s: two pods"):
        RecorderTriggers(TimedOut(b.build())).when(lambda s: False, timeout=0.1, what="two pods")


def cut_short(history: History):
    checker = Checker(FakeRecorder(history), RunInfo(run_id="r", seed=1, options=OPTIONS),
                      namespace="ns", operator_user_agent="op")  # fmt: skip
    return checker.cut_short(nodeid="t", reason="no Idle pod within 70s")


def test_a_scenario_cut_short_after_a_certain_violation_is_failed_not_inconclusive():
    b = HistoryBuilder()  # the pool kills three replacements while the scenario waits
    for i in range(3):
        b.at(i * 10).pod(f"p{i}", phase="Unknown")
        b.at(i * 10 + 1).pod(f"p{i}", phase="Terminating")
    ticks(b, 30, 60, every=5)
    result = cut_short(build(b))
    assert result is not None and result.outcome == "failed"
    assert [v.invariant for v in result.verdicts if v.failed] == ["no-pod-churn"]
    assert result.message.splitlines()[0].startswith("1 invariant(s) violated by")
    assert "cut short (INCONCLUSIVE: no Idle pod within 70s)" in result.message


def test_a_scenario_cut_short_with_nothing_certain_stays_inconclusive():
    # replicas-converge has not failed yet at the end of a short history: nothing is certain
    b = HistoryBuilder()
    b.at(0).claimset("S1", replicas=2, status_replicas=0, ready=0)
    ticks(b, 1, 30, every=5)
    assert cut_short(build(b)) is None
    # and a certain violation during a dependency's outage is no verdict on the operator
    b = never_converges(HistoryBuilder())
    b.at(150).period(DEPENDENCY_OUTAGE, "start", "matrixone", "not running")
    b.at(170).period(DEPENDENCY_OUTAGE, "end", "matrixone")
    assert cut_short(build(b)) is None
