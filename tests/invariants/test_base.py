"""Deadline bookkeeping shared by the time-based invariants, and what a deadline judge tells
the settle: whether something may still fail it (open) or its failure stays (decided)."""

from mochaos.config import CheckOptions
from mochaos.invariants import get
from mochaos.invariants.base import Deadlines, feed
from mochaos.invariants.facts import Facts

from support.builders import HistoryBuilder, bind, ticks


def test_obligation_is_due_only_after_its_deadline_and_stays_open():
    deadlines = Deadlines()
    deadlines.open("x", start=10, within=5)
    assert deadlines.due(15) is None
    late = deadlines.due(15.01)
    assert late is not None
    assert (late.key, late.start, late.deadline) == ("x", 10, 15)
    assert deadlines.pending == 1
    assert deadlines.due(16) is late
    assert deadlines.in_time(14) == [late]
    assert deadlines.in_time(15) == []
    assert deadlines.in_time(14) == []  # once past, never again


def test_closed_obligation_is_never_due():
    deadlines = Deadlines()
    deadlines.open("x", start=10, within=5)
    deadlines.close("x")
    assert deadlines.due(100) is None
    assert deadlines.pending == 0


def test_reopening_an_open_key_keeps_the_first_start():
    deadlines = Deadlines()
    deadlines.open("x", start=10, within=5)
    deadlines.open("x", start=12, within=5)
    assert deadlines.due(16).start == 10
    assert deadlines.opened == 1


def test_reopening_after_close_starts_a_new_clock():
    deadlines = Deadlines()
    deadlines.open("x", start=10, within=5)
    deadlines.close("x")
    deadlines.open("x", start=20, within=5)
    assert deadlines.due(16) is None
    assert deadlines.due(26).start == 20
    assert deadlines.get("x").start == 20


def test_earliest_deadline_is_due_first_and_summary_counts_open():
    deadlines = Deadlines()
    deadlines.open("late", start=0, within=50)
    deadlines.open("early", start=5, within=10)
    assert deadlines.summary("things") == (
        "2 things; 2 still open, deadline not reached by the end of the history"
    )
    assert deadlines.due(100).key == "early"
    deadlines.close("early")
    assert deadlines.due(100).key == "late"
    deadlines.close("late")
    assert deadlines.summary("things") == "2 things"
    assert deadlines.get("late") is None


def _deadline_judge(history: HistoryBuilder):
    """A finalizer-completes judge (a DeadlineJudge) fed ``history``."""
    facts = Facts()
    judge = get("finalizer-completes").judge(CheckOptions(finalize_timeout=60), facts)
    feed(facts, (judge,), history.entries)
    return judge


def test_a_deadline_judge_is_open_until_the_deadline_and_decided_once_past_it():
    b = HistoryBuilder()
    bind(b, "X", "A")
    idle = _deadline_judge(b)
    assert (idle.open(100), idle.decided(100)) == (False, False)  # nothing to wait for
    b.at(10).claim("X", deleting=True)  # due by 70
    judge = _deadline_judge(b)
    assert (judge.open(69.9), judge.decided(69.9)) == (True, False)
    assert (judge.open(70), judge.decided(70)) == (False, False)  # at the deadline: neither
    assert (judge.open(70.1), judge.decided(70.1)) == (False, True)  # late by now, no entry yet
    assert judge.failure is None


def test_a_deadline_judges_failure_stays_decided_after_its_obligation_closed():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(10).claim("X", deleting=True)
    ticks(b, 71, 71)  # an entry past the deadline: the failure
    b.at(72).claim("X", finalizers=[])
    b.delete("CNClaim", "X")
    judge = _deadline_judge(b)
    assert judge.failure is not None and judge.deadlines.pending == 0
    assert (judge.open(72), judge.decided(72)) == (False, True)
