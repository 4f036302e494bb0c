"""Deadline bookkeeping shared by the time-based invariants."""

from mochaos.invariants.base import Deadlines


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
