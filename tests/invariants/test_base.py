"""Deadline bookkeeping shared by the time-based invariants."""

from mochaos.invariants.base import Deadlines


def test_obligation_expires_only_after_its_deadline():
    deadlines = Deadlines()
    deadlines.open("x", start=10, within=5, seq=1)
    assert deadlines.expired(15) is None
    late = deadlines.expired(15.01)
    assert late is not None
    assert (late.key, late.start, late.deadline, late.seq) == ("x", 10, 15, 1)
    assert deadlines.pending == 0


def test_closed_obligation_never_expires():
    deadlines = Deadlines()
    deadlines.open("x", start=10, within=5, seq=1)
    deadlines.close("x")
    assert deadlines.expired(100) is None


def test_reopening_an_open_key_keeps_the_first_start():
    deadlines = Deadlines()
    deadlines.open("x", start=10, within=5, seq=1)
    deadlines.open("x", start=12, within=5, seq=2)
    assert deadlines.expired(16).start == 10
    assert deadlines.opened == 1


def test_reopening_after_close_starts_a_new_clock():
    deadlines = Deadlines()
    deadlines.open("x", start=10, within=5, seq=1)
    deadlines.close("x")
    deadlines.open("x", start=20, within=5, seq=2)
    assert deadlines.expired(16) is None
    assert deadlines.expired(26).start == 20


def test_earliest_deadline_expires_first_and_summary_counts_open():
    deadlines = Deadlines()
    deadlines.open("late", start=0, within=50, seq=1)
    deadlines.open("early", start=5, within=10, seq=2)
    assert "1 still open" not in deadlines.summary("things")
    assert deadlines.expired(100).key == "early"
    assert deadlines.summary("things").startswith("2 things; 1 still open")
