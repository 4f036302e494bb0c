"""every-finalizer-completes: each of the operator's finalizers leaves its object in time."""

from mochaos.config import CheckOptions
from mochaos.ctrl.finalizers import (
    CATALOGUE,
    CNSTORE_FINALIZER,
    DRAINING_FINALIZER,
    STORE_DRAIN_TIMEOUT,
    lookup,
)
from mochaos.ctrl.objects import CLAIMSET_FINALIZER
from mochaos.invariants import IncrementalChecker, get

from support.builders import HistoryBuilder

INVARIANT = get("every-finalizer-completes")
OPTIONS = CheckOptions(grace=20)


def test_a_pod_stuck_terminating_on_its_store_finalizer_fails_at_the_deadline():
    b = HistoryBuilder()
    b.pod("p", phase="Idle", finalizers=[CNSTORE_FINALIZER])
    b.at(10).pod("p", deleting=True)
    revealed = b.at(200).pod("p", phase="Terminating")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert (verdict.violation.t, verdict.violation.seq) == (10 + 60 + 20, revealed.seq)
    assert verdict.violation.objects == ("Pod/p",)
    assert verdict.violation.message.startswith(
        f"Pod p still holds finalizer {CNSTORE_FINALIZER} 80s after its deletion started "
        "(removed by the store controller's OnDeleted"
    )


def test_removed_in_time_or_object_gone_passes():
    b = HistoryBuilder()
    b.pod("p", phase="Idle", finalizers=[CNSTORE_FINALIZER])
    b.at(10).pod("p", deleting=True)
    b.at(60).pod("p", finalizers=[])
    b.claimset("S1", finalizers=[CLAIMSET_FINALIZER])
    b.at(70).claimset("S1", deleting=True)
    b.at(150).delete("CNClaimSet", "S1")
    b.at(400).pod("q", phase="Idle")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "pass", verdict
    assert verdict.note == "2 finalizer removal(s) due"


def test_the_draining_hook_is_due_from_kruises_hold_not_from_deletion():
    held = STORE_DRAIN_TIMEOUT + 30 + 20
    b = HistoryBuilder()
    b.pod("p", phase="Idle", finalizers=[DRAINING_FINALIZER])
    b.at(5).pod("p", phase="Terminating", kruise="PreparingDelete")
    b.at(5 + held - 1).pod("p", phase="Terminating")
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"
    b.at(5 + held + 1).pod("p", phase="Terminating")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert "after OpenKruise held it in PreparingDelete" in verdict.violation.message
    b = HistoryBuilder()  # the store finalizer is not due while kruise only holds the pod
    b.pod("p", phase="Idle", finalizers=[CNSTORE_FINALIZER])
    b.at(5).pod("p", kruise="PreparingDelete")
    b.at(1000).pod("p", phase="Terminating")
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_the_claims_own_finalizer_and_foreign_ones_are_not_judged_here():
    b = HistoryBuilder()
    b.claim("X", phase="Bound")
    b.at(1).claim("X", deleting=True)
    b.pod("p", phase="Idle", finalizers=["example.com/someone-elses"])
    b.pod("p", deleting=True)
    b.at(5000).pod("p", phase="Terminating")
    b.claim("X", phase="Bound")
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_each_finalizer_is_judged_whatever_else_its_object_holds():
    b = HistoryBuilder()  # a foreign finalizer beside the operator's
    b.pod("p", phase="Idle", finalizers=["example.com/protect", CNSTORE_FINALIZER])
    b.at(10).pod("p", deleting=True)
    b.at(200).pod("p", phase="Terminating")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert verdict.violation.message.startswith(f"Pod p still holds finalizer {CNSTORE_FINALIZER}")
    held = STORE_DRAIN_TIMEOUT + 30 + 20
    b = HistoryBuilder()  # beside the hook, one that is not due while kruise only holds it
    b.pod("p", phase="Idle", finalizers=["matrixorigin.io/a-later-build", DRAINING_FINALIZER])
    b.at(5).pod("p", kruise="PreparingDelete")
    b.at(5 + held + 1).pod("p", phase="Terminating")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert verdict.violation.message.startswith(
        f"Pod p still holds finalizer {DRAINING_FINALIZER} {held:g}s after OpenKruise held it"
    )


def test_in_flight_until_the_deadline_then_failed_by_the_clock_alone():
    b = HistoryBuilder()
    b.pod("p", phase="Idle", finalizers=[CNSTORE_FINALIZER])
    b.at(10).pod("p", deleting=True)
    checker = IncrementalChecker(OPTIONS, (INVARIANT,))
    checker.feed(b.entries)
    assert checker.in_flight(89.9) == [f"Pod p: {CNSTORE_FINALIZER}"]
    assert checker.in_flight(90) == []
    assert checker.poll(90) == []
    (late,) = checker.poll(90.5)  # no entry since the deletion: the clock reveals it
    assert (late.violation.t, late.violation.seq) == (90, b.seq)


def test_deadlines_scale_with_the_time_scale_and_unknown_operator_finalizers_get_the_default():
    b = HistoryBuilder()
    b.pod("p", phase="Idle", finalizers=["matrixorigin.io/new-in-a-later-build"])
    b.at(10).pod("p", deleting=True)
    b.at(10 + 0.2 * 60 + 4 + 1).pod("p", phase="Terminating")
    scaled = CheckOptions(grace=4, time_scale=0.2)
    verdict = INVARIANT.check(b.build(), scaled)
    assert verdict.status == "fail"
    assert "not in the catalogue" in verdict.violation.message


def test_the_catalogue_names_each_finalizer_once_and_only_the_operators():
    names = [f.name for f in CATALOGUE]
    assert len(names) == len(set(names))
    assert all(n.startswith("matrixorigin.io/") for n in names)
    assert lookup("example.com/x") is None
