"""The judged view of a history: changes in the apiserver's order, time on the operator's
clock (apiserver outages, dependency outages and operator freezes left out), violations
reported back on the wall clock."""

from __future__ import annotations

import math
from dataclasses import replace

from mochaos.config import CheckOptions
from mochaos.invariants import evaluate, get
from mochaos.invariants.judged import (
    OperatorClock,
    Period,
    dependency_outages,
    describe,
    external_freezes,
    freezes,
    judged,
    periods,
)
from mochaos.observe.history import (
    APISERVER_OUTAGE,
    DEPENDENCY_OUTAGE,
    OPERATOR_FREEZE,
    OPERATOR_HELD,
    History,
    PeriodEdge,
)

from support.builders import HistoryBuilder, bind, ticks

OPTIONS = CheckOptions(converge_timeout=60)


def failed(history: History) -> dict[str, float]:
    """Failed invariant -> the wall time of its violation."""
    return {
        v.invariant: v.violation.t
        for v in evaluate(history, OPTIONS, final=False)
        if v.failed and v.violation
    }


def received_out_of_order(b: HistoryBuilder, first: int, second: int) -> History:
    """The builder's history with entries ``first`` and ``second`` (indexes) received in
    swapped order: each keeps its resourceVersion, seq numbers follow the new order."""
    entries = list(b.entries)
    entries[first], entries[second] = entries[second], entries[first]
    return History(replace(e, seq=i + 1) for i, e in enumerate(entries))


def migration_onto_a_held_pod() -> tuple[HistoryBuilder, int, int]:
    """Z holds B; the agent points X at B (rv r), the operator relabels B for X (rv r+1).
    Returns the builder and the indexes of those two changes."""
    b = HistoryBuilder()
    bind(b, "X", "A")
    bind(b, "Z", "B", claimset="S2")
    b.at(5).claim("X", pod="B", source="A", by="request_migration")
    spec_change = len(b.entries) - 2
    b.at(5.1).pod("B", claimed_by="X")
    return b, spec_change, len(b.entries) - 1


def test_a_change_received_before_the_write_it_follows_is_judged_after_it():
    b, spec_change, relabel = migration_onto_a_held_pod()
    skewed = received_out_of_order(b, spec_change, relabel)
    # Red: on receive order, the relabel looks like the operator's own double binding...
    raw = get("single-binding").check(skewed, OPTIONS)
    assert raw.failed and "while its spec.podName is not B" in raw.violation.message
    # ...but the apiserver made the agent's write first: judged in its order, no violation.
    assert "single-binding" not in failed(skewed)
    view, _ = judged(skewed)
    assert [c.rv for c in view.changes()] == sorted(c.rv for c in skewed.changes())
    assert [e.seq for e in view if not hasattr(e, "rv")] == [
        e.seq for e in skewed if not hasattr(e, "rv")
    ], "entries other than changes keep their places"


def test_a_real_double_binding_is_still_caught():
    b = HistoryBuilder()
    bind(b, "X", "A")
    bind(b, "Z", "B", claimset="S2")
    b.at(5.1).pod("B", claimed_by="X")  # no spec change of X: the operator's own doing
    assert "single-binding" in failed(b.build())


def outage(b: HistoryBuilder, start: float, end: float) -> None:
    b.at(start).period(APISERVER_OUTAGE, "start", "apiserver")
    b.at(end).period(APISERVER_OUTAGE, "end", "apiserver")


def scaled(converged_at: float, *, outage_from: float | None = None) -> History:
    """S1 scaled to 2 at 0, converging at ``converged_at``; a 40 s outage from
    ``outage_from`` (as the recorder's probe records it)."""
    b = HistoryBuilder()
    b.at(0).claimset("S1", replicas=2, status_replicas=0, ready=0)
    if outage_from is not None:
        outage(b, outage_from, outage_from + 40)
    b.at(converged_at).claimset("S1", status_replicas=2, ready=2)
    ticks(b, converged_at + 1, 200, every=5)
    return History(sorted(b.entries, key=lambda e: e.t))


def test_time_the_apiserver_did_not_answer_does_not_count_against_a_deadline():
    assert "replicas-converge" in failed(scaled(90))  # red: 90 s > 60 s
    assert "replicas-converge" not in failed(scaled(90, outage_from=20))  # 50 s of its time


def test_a_deadline_missed_despite_the_outage_is_reported_on_the_wall_clock():
    # 120 s to converge, 40 of them without an apiserver: 80 s > 60 s. The deadline passes
    # at 60 s of operator time = 100 s on the wall clock.
    assert failed(scaled(120, outage_from=20)) == {"replicas-converge": 100}


def test_the_operator_clock():
    clock = OperatorClock(((10.0, 20.0), (30.0, 35.0)))
    assert [clock.operator_time(t) for t in (5, 10, 15, 20, 25, 32, 40)] == [
        5,
        10,
        10,
        10,
        15,
        20,
        25,
    ]
    assert [clock.wall_time(c) for c in (5, 10, 15, 20, 25)] == [5, 20, 25, 35, 40]
    still_down = OperatorClock(((10.0, math.inf),))
    assert still_down.operator_time(1e9) == 10
    assert still_down.wall_time(10) == 10


def test_outages_are_read_from_the_typed_periods():
    b = HistoryBuilder()
    outage(b, 10, 20)
    b.at(25).period(APISERVER_OUTAGE, "start", "apiserver")
    b.at(26).period(APISERVER_OUTAGE, "start", "apiserver")  # the probe restarted: the same
    history = b.build()
    assert OperatorClock.of(history).outages == ((10, 20), (25, math.inf))
    assert all(isinstance(m, PeriodEdge) for m in history)


def test_what_the_operator_logged_while_its_clock_stood_still_is_not_judged():
    """A view held back by the interposer: the operator retried, blind; its retries then are
    no verdict's, those after are (and one at an end of the period is its own)."""
    from mochaos.invariants.judged import judged
    from mochaos.observe.history import OPERATOR_BLIND

    b = HistoryBuilder()
    b.at(10).period(OPERATOR_BLIND, "start", "stale-view-1", "pods")
    for t in (10, 11, 12, 13, 20):
        b.at(t).log("finalize CNClaim", name="X")
    b.at(20).period(OPERATOR_BLIND, "end", "stale-view-1")
    b.at(21).log("finalize CNClaim", name="X")
    kept, clock = judged(b.build())
    assert [e.t for e in kept.logs()] == [10, 10, 11]  # 10 and 20 (ends) and 21, on its clock
    assert clock.stopped(15) and not clock.stopped(10) and not clock.stopped(20)


def test_the_operators_refused_requests_while_its_clock_stood_still_are_not_judged():
    """Any answer from 400 up is a refusal its retry left behind; a request answered below
    400 is the operator's doing, kept."""
    from mochaos.observe.history import OPERATOR_BLIND

    b = HistoryBuilder()
    b.at(10).period(OPERATOR_BLIND, "start", "stale-view-1", "pods")
    for status in (200, 399, 400, 409, 500):
        b.at(15).call("patch", "pods", "p", status)
    b.at(20).period(OPERATOR_BLIND, "end", "stale-view-1")
    kept, _ = judged(b.build())
    assert [c.status for c in kept.api_calls()] == [200, 399]


def test_a_marker_worded_as_a_period_is_no_period():
    """Periods are data: a marker (a scenario's own, or the prose of an earlier version)
    that reads like one changes neither the clock nor the verdict."""
    b = HistoryBuilder()
    b.at(0).claimset("S1", replicas=2, status_replicas=0, ready=0)
    b.at(20).marker("cluster: apiserver unavailable")
    b.at(20).marker("cluster: dependency unavailable: kruise (not running)")
    b.at(60).marker("cluster: apiserver available again after 40.0s")
    b.at(90).claimset("S1", status_replicas=2, ready=2)
    ticks(b, 91, 200, every=5)
    history = History(sorted(b.entries, key=lambda e: e.t))
    assert OperatorClock.of(history).outages == ()
    assert dependency_outages(history) == []
    assert "replicas-converge" in failed(history)


def test_a_reworded_period_text_changes_no_verdict(monkeypatch):
    """How a report words a period is its kind's text, read by nothing that judges."""
    from mochaos.observe import history as history_module

    before = failed(scaled(90, outage_from=20))
    reworded = replace(
        history_module.APISERVER_OUTAGE,
        start_text="the API went away", end_text="the API is back ({seconds}s later)",
    )  # fmt: skip
    monkeypatch.setitem(history_module.PERIOD_KINDS, "apiserver-outage", reworded)
    assert failed(scaled(90, outage_from=20)) == before


def dependency_down(b: HistoryBuilder, name: str, start: float, end: float | None) -> None:
    b.at(start).period(DEPENDENCY_OUTAGE, "start", name, "not running")
    if end is not None:
        b.at(end).period(DEPENDENCY_OUTAGE, "end", name)


def frozen(b: HistoryBuilder, start: float, end: float, pid: int = 42) -> None:
    b.at(start).period(OPERATOR_FREEZE, "start", str(pid), "SIGSTOP")
    b.at(end).period(OPERATOR_FREEZE, "end", str(pid))


def test_dependency_outages_are_read_per_dependency():
    b = HistoryBuilder()
    dependency_down(b, "matrixone", 10, None)
    dependency_down(b, "kruise", 12, 15)
    b.at(30).period(DEPENDENCY_OUTAGE, "end", "matrixone")
    dependency_down(b, "kruise", 40, None)
    assert dependency_outages(b.build()) == [
        Period(10, 30, "matrixone", "not running"),
        Period(12, 15, "kruise", "not running"),
        Period(40, math.inf, "kruise", "not running"),
    ]


def test_overlapping_periods_are_left_out_of_the_operator_clock_once():
    b = HistoryBuilder()
    outage(b, 10, 20)
    dependency_down(b, "matrixone", 15, 30)
    frozen(b, 28, 32)
    frozen(b, 50, 55)
    assert OperatorClock.of(b.build()).outages == ((10, 32), (50, 55))


def test_a_dependency_down_does_not_count_against_a_deadline():
    b = HistoryBuilder()
    b.at(0).claimset("S1", replicas=2, status_replicas=0, ready=0)
    dependency_down(b, "kruise", 20, 60)  # no pods while the workload controller is down
    b.at(90).claimset("S1", status_replicas=2, ready=2)
    ticks(b, 91, 200, every=5)
    assert "replicas-converge" not in failed(History(sorted(b.entries, key=lambda e: e.t)))


def test_a_freeze_the_framework_made_is_its_pause_fault_any_other_is_external():
    b = HistoryBuilder()
    b.at(10).action("pause_operator", kind="Operator", name="operator", params={"seconds": 5})
    frozen(b, 10.2, 15.1)  # the pause, as the probe saw it
    frozen(b, 40, 48)  # someone else's SIGSTOP
    history = b.build()
    assert [(f.start, f.end) for f in freezes(history)] == [(10.2, 15.1), (40, 48)]
    assert [(f.start, f.end, f.what) for f in external_freezes(history)] == [(40, 48, "42")]


def test_each_kind_of_period_is_read_per_subject():
    b = HistoryBuilder()
    outage(b, 10, 20)
    dependency_down(b, "kruise", 12, 15)
    frozen(b, 30, 31.5)
    history = b.build()
    assert periods(history, APISERVER_OUTAGE) == [Period(10, 20, "apiserver", "")]
    assert dependency_outages(history) == [Period(12, 15, "kruise", "not running")]
    assert freezes(history) == [Period(30, 31.5, "42", "SIGSTOP")]


def test_a_period_ends_with_its_own_kinds_end_even_when_another_kind_names_the_same_subject():
    b = HistoryBuilder()
    dependency_down(b, "kruise", 10, 20)
    b.at(15).period(OPERATOR_HELD, "start", "kruise", "a write held", component="operator")
    b.at(30).period(OPERATOR_HELD, "end", "kruise", component="operator")  # a rule so named
    assert OperatorClock.of(b.build()).outages == ((10, 30),)


def test_an_end_with_no_period_open_is_ignored():
    b = HistoryBuilder()
    b.at(5).period(OPERATOR_FREEZE, "end", "42")  # its start not recorded
    frozen(b, 10, 12)
    b.at(13).period(APISERVER_OUTAGE, "end", "apiserver")
    history = b.build()
    assert freezes(history) == [Period(10, 12, "42", "SIGSTOP")]
    assert OperatorClock.of(history).outages == ((10, 12),)


def test_periods_that_touch_are_one_outage_of_the_operator_clock():
    b = HistoryBuilder()
    outage(b, 10, 20)
    frozen(b, 20, 30)  # stopped as the apiserver came back
    clock = OperatorClock.of(b.build())
    assert clock.outages == ((10, 30),)
    assert clock.wall_time(10) == 30  # the last wall moment at operator time 10


def test_a_moment_an_open_outage_started_maps_back_to_its_start_after_earlier_outages():
    clock = OperatorClock(((10.0, 20.0), (30.0, math.inf)))
    assert [clock.operator_time(t) for t in (25, 30, 1e9)] == [15, 20, 20]
    assert [clock.wall_time(c) for c in (15, 20)] == [25, 30]


def test_describe_gives_each_periods_length_or_how_long_it_has_been_open():
    found = [
        Period(10, 30.34, "matrixone", "not running"),
        Period(40, math.inf, "kruise"),
        Period(50, math.inf, "42", "SIGSTOP"),  # started after now: not negative
    ]
    assert describe(found, 45.4) == (
        "matrixone for 20.3s (not running); kruise for 5s and not back; "
        "42 for 0s and not back (SIGSTOP)"
    )
    assert describe([], 45) == ""


def test_a_pause_covers_freezes_within_its_slack_at_either_end():
    b = HistoryBuilder()

    def pause_then_freeze(at: float, start: float, end: float, **params: float) -> None:
        first, second = sorted([(at, "pause"), (start, "freeze")])
        for t, what in (first, second):
            if what == "pause":
                b.at(t).action("pause_operator", kind="Operator", name="operator", params=params)
            else:
                b.at(t).period(OPERATOR_FREEZE, "start", "42", "SIGSTOP")
        b.at(end).period(OPERATOR_FREEZE, "end", "42")

    frozen(b, 2, 4)  # before any pause
    pause_then_freeze(10, 9, 16, seconds=5)  # from 1 s before it to 1 s after its end: the pause
    pause_then_freeze(30, 31, 35, seconds=5)  # up to 1 s late: the pause
    pause_then_freeze(50, 48.9, 52, seconds=5)  # too early
    pause_then_freeze(70, 71.1, 74, seconds=5)  # too late
    pause_then_freeze(90, 90.5, 96.1, seconds=5)  # too long
    pause_then_freeze(110, 110.2, 111)  # a pause of unknown length counts as 0 s: ends by 111
    pause_then_freeze(130, 130.2, 131.5)
    history = b.build()
    assert [f.start for f in external_freezes(history)] == [2, 48.9, 71.1, 90.5, 130.2]


def test_events_keep_their_places_their_versions_are_of_another_store():
    b = HistoryBuilder()
    b.at(1).pod("A", phase="Idle")
    event = b.at(2).other("Event", "e1")
    b.entries[-1] = replace(event, rv=5)  # an etcd of their own: a version below the pods'
    b.at(3).pod("A", phase="Bound")
    view, _ = judged(b.build())
    assert [(e.kind, e.rv) for e in view] == [("Pod", 101), ("Event", 5), ("Pod", 103)]
