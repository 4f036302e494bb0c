"""The incremental checker: same verdicts fed in chunks, deadlines against now, what's in flight."""

from __future__ import annotations

import dataclasses
import random

import pytest

from mochaos.config import CheckOptions
from mochaos.invariants import ALL, IncrementalChecker, evaluate, get
from mochaos.invariants.checker import moved
from mochaos.observe.history import ActionRecord, Change, Entry, History

from .design import DESIGN
from support.builders import HistoryBuilder, bind, ticks
from support.synthetic import synthetic

FAST = CheckOptions(
    finalize_timeout=12, retry_window=12, retry_budget=4, grace=4, migration_timeout=24,
    converge_timeout=12, time_scale=0.2,
)  # fmt: skip


def _summary(verdicts):
    return [(v.invariant, v.status, v.violation, v.note) for v in verdicts]


@pytest.mark.parametrize("seed", range(6))
def test_chunked_feeding_judges_every_prefix_as_a_whole_history(seed):
    history = synthetic(500, seed, faults=0.05)
    rng = random.Random(seed)
    checker = IncrementalChecker(FAST, ALL)
    fed = 0
    while fed < len(history):
        step = rng.randint(1, 60)
        checker.feed(history[fed : fed + step])
        fed = min(fed + step, len(history))
        prefix = History(history[:fed])
        for final in (False, True):
            whole = evaluate(prefix, FAST, final=final)
            assert _summary(checker.verdicts(final=final)) == _summary(whole)


def test_synthetic_histories_exercise_each_of_the_design_s_ten():
    failed = set()
    for seed in range(6):
        verdicts = evaluate(synthetic(800, seed, faults=0.1), FAST, final=True)
        failed |= {v.invariant for v in verdicts if v.failed}
    assert failed >= set(DESIGN)


def _as_recorded(history: History) -> list[Entry]:
    """The recorder's journal of ``history``: each intent record first without its result,
    completed again right after the change its write caused."""
    out: list[Entry] = []
    due: dict[int, ActionRecord] = {}
    for entry in history:
        if isinstance(entry, ActionRecord) and entry.intent and entry.write_rv is not None:
            out.append(dataclasses.replace(entry, write_rv=None))
            due[entry.write_rv] = entry
            continue
        out.append(entry)
        if isinstance(entry, Change) and entry.rv in due:
            out.append(due.pop(entry.rv))
    return out + list(due.values())


@pytest.mark.parametrize("seed", range(4))
def test_records_completed_after_their_change_give_the_same_verdicts(seed):
    history = synthetic(500, seed, faults=0.05)
    journal = _as_recorded(history)
    assert len(journal) == len(history) + sum(
        1 for e in history if isinstance(e, ActionRecord) and e.intent and e.write_rv
    )
    checker = IncrementalChecker(FAST, ALL)
    checker.feed(journal)
    assert _summary(checker.verdicts(final=True)) == _summary(evaluate(history, FAST, final=True))


def test_a_suspect_change_is_cleared_when_our_record_completes():
    b = HistoryBuilder()
    bind(b, "Z", "B")
    bind(b, "X", "A")
    intent = b.action("request_migration", kind="CNClaim", name="X", intent=True)
    ours = b.claim("X", pod="B", source="A")  # our patch: X now names Z's pod B
    checker = IncrementalChecker(CheckOptions(), (get("single-binding"),))
    (failed,) = checker.feed(b.entries)
    assert failed.violation.seq == ours.seq
    assert checker.feed([dataclasses.replace(intent, write_rv=ours.rv)]) == []
    assert checker.verdicts()[0].status == "pass"


def test_feed_reports_a_failure_once_and_poll_reports_deadlines_passed_by_now():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(10).claim("X", deleting=True)
    checker = IncrementalChecker(CheckOptions(finalize_timeout=60), (get("finalizer-completes"),))
    assert checker.feed(b.entries) == []
    assert checker.poll(70) == []
    (late,) = checker.poll(70.5)
    assert (late.invariant, late.violation.t, late.violation.seq) == (
        "finalizer-completes", 70, b.entries[-1].seq,
    )  # fmt: skip
    assert checker.poll(80) == []
    assert checker.verdicts()[0].status == "pass"  # no entry past the deadline yet
    ticks(b, 71, 71)
    assert checker.feed(b.entries[-1:]) == []
    assert checker.verdicts()[0].violation.seq == b.entries[-1].seq


def test_in_flight_until_each_deadline_passes():
    b = HistoryBuilder()
    bind(b, "X", "A")
    bind(b, "Y", "C")
    b.at(0).claim("X", deleting=True)
    b.at(5).claim("Y", pod="B", source="C")
    checker = IncrementalChecker(CheckOptions(finalize_timeout=60, migration_timeout=120), ALL)
    checker.feed(b.entries)
    assert checker.in_flight(10) == ["deleting X", "migrating Y"]
    assert checker.in_flight(60) == ["migrating Y"]
    assert checker.in_flight(124.9) == ["migrating Y"]
    assert checker.in_flight(125) == []


def test_in_flight_ends_when_the_claim_is_gone_or_stops_migrating():
    b = HistoryBuilder()
    bind(b, "X", "A")
    bind(b, "Y", "C")
    b.at(0).claim("X", deleting=True)
    b.at(5).claim("Y", pod="B", source="C")
    b.at(6).delete("CNClaim", "X")
    b.at(7).claim("Y", source=None)  # store not moved yet: the migration is not complete
    checker = IncrementalChecker(CheckOptions(), ALL)
    checker.feed(b.entries)
    assert checker.in_flight(10) == []
    b.at(8).claim("Y", source="C")
    b.at(9).claim("Y", deleting=True)
    checker.feed(b.entries[-2:])
    assert checker.in_flight(10) == ["deleting Y"]


def test_a_deletion_past_its_deadline_stays_out_of_flight_while_it_lingers():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(0).claim("X", deleting=True)
    ticks(b, 61, 61)
    b.at(62).claim("X", finalizers=[])
    checker = IncrementalChecker(CheckOptions(finalize_timeout=60), ALL)
    checker.feed(b.entries)
    assert checker.verdicts()[0].failed
    assert checker.in_flight(63) == []


def test_last_move_ignores_our_writes_even_when_their_record_comes_late():
    b = HistoryBuilder()
    checker = IncrementalChecker(CheckOptions(), ALL)
    assert checker.last_move() == 0.0
    b.at(1).pod("A", phase="Idle")
    b.at(2).other("Event", "e1")
    intent = b.at(3).action("scale_claimset", kind="CNClaimSet", name="S1", intent=True)
    ours = b.claimset("S1", replicas=1)
    checker.feed(b.entries)
    assert checker.last_move() == 3
    checker.feed([dataclasses.replace(intent, write_rv=ours.rv)])
    assert checker.last_move() == 1
    assert checker.end == 3


def _claimset(seq: int, t: float, claims: list[str], replicas: int = 2) -> Change:
    obj = {
        "kind": "CNClaimSet",
        "metadata": {"name": "S1", "resourceVersion": str(seq), "managedFields": [{"t": t}]},
        "spec": {"replicas": replicas},
        "status": {"claims": [{"claimName": c, "store": {"string": f"pod-{c}"}} for c in claims]},
    }
    event = "ADDED" if seq == 1 else "MODIFIED"
    return Change(seq, t, "CNClaimSet", event, "ns", "S1", seq, obj)


def test_last_move_ignores_a_status_list_rewritten_in_another_order():
    # The real CNClaimSet controller's status.claims order flips from pass to pass: no move.
    checker = IncrementalChecker(CheckOptions(), ALL)
    checker.feed([_claimset(1, 1, ["X", "Y"])])
    checker.feed([_claimset(2, 5, ["Y", "X"]), _claimset(3, 9, ["X", "Y"])])
    assert checker.last_move() == 1
    checker.feed([_claimset(4, 12, ["X", "Z"])])
    assert checker.last_move() == 12
    checker.feed([_claimset(5, 15, ["Z", "X"], replicas=3)])
    assert checker.last_move() == 15


def test_an_empty_checker_and_a_subset_of_invariants():
    checker = IncrementalChecker(CheckOptions(), (get("retry-budget"), get("no-leaked-pods")))
    assert [v.status for v in checker.verdicts(final=True)] == ["pass", "skipped"]
    assert checker.in_flight(0) == [] and checker.end == 0.0


def test_feed_and_verdicts_judge_the_running_history_not_the_settled_one():
    b = HistoryBuilder()
    b.pod("B", phase="Bound")  # a disagreement only settle judges
    checker = IncrementalChecker(CheckOptions(), ALL)
    assert checker.feed(b.entries) == []
    assert [v.status for v in checker.verdicts()].count("fail") == 0
    assert [v.invariant for v in checker.verdicts(final=True) if v.failed] == [
        "pod-claim-agreement"
    ]


def test_undecided_lists_what_is_in_flight_or_open_for_every_invariant_not_failed_for_good():
    options = CheckOptions(finalize_timeout=60, converge_timeout=20, retry_window=12)
    order = ("finalizer-completes", "replicas-converge", "retry-budget", "single-binding")
    checker = IncrementalChecker(options, tuple(get(i) for i in (*order, "no-leaked-pods")))
    b = HistoryBuilder()
    b.at(0).claimset("S1", replicas=2, status_replicas=0, ready=0)  # to converge by 20
    bind(b, "X", "A")
    bind(b, "Z", "B")
    b.pod("B", claimed_by="X")  # a double binding: single-binding fails at once...
    b.at(1).claim("X", deleting=True)  # to be gone by 61
    b.at(2).log("finalize CNClaim", name="X")  # a retry: its window lasts until 14
    checker.feed(b.entries)
    assert [v.status for v in checker.verdicts()] == ["pass", "pass", "pass", "fail", "skipped"]
    # ...but not for good (an action record completed later may show the write was ours),
    # and like no-leaked-pods (judged at settle) it has nothing in flight and is never open.
    assert checker.undecided(5) == ["deleting X", "replicas-converge open", "retry-budget open"]
    assert checker.decided(5) == []
    b.at(25).log("finalize CNClaim", name="X")  # past the convergence deadline: a failure
    checker.feed(b.entries[-1:])
    assert checker.decided(30) == ["replicas-converge"]
    assert checker.undecided(30) == ["deleting X", "retry-budget open"]
    assert checker.undecided(40) == ["deleting X"]
    assert checker.decided(61.5) == ["finalizer-completes", "replicas-converge"]
    assert checker.undecided(61.5) == []


def test_a_deletion_is_a_move_even_when_its_last_state_is_the_previous_one():
    b = HistoryBuilder()
    b.at(1).pod("A", phase="Idle")
    gone = b.at(5).delete("Pod", "A")  # the DELETED event carries the object as it was
    checker = IncrementalChecker(CheckOptions(), ALL)
    checker.feed(b.entries)
    assert gone.obj == b.entries[0].obj
    assert checker.last_move() == 5


def test_the_order_of_a_list_is_no_move_whatever_its_items_are():
    def pod(rv: int, items: list) -> Change:
        obj = {"kind": "Pod", "metadata": {"name": "A", "resourceVersion": str(rv)}}
        return Change(rv, rv, "Pod", "MODIFIED", "ns", "A", rv, obj | {"spec": {"items": items}})

    # JSON lists may mix types (a port by number and by name, a null, an object).
    mixed = [8080, "http", None, {"name": "x"}, ["y"]]
    before = pod(1, mixed).obj
    assert not moved(before, pod(2, mixed[::-1]))
    assert not moved(before, pod(3, mixed[2:] + mixed[:2]))
    assert moved(before, pod(4, [8081, "http", None, {"name": "x"}, ["y"]]))
    assert moved(before, pod(5, mixed[1:]))
