"""replicas-converge: CNClaimSet status reaches spec.replicas within the timeout."""

from mochaos.config import CheckOptions
from mochaos.invariants import IncrementalChecker, get
from mochaos.observe.history import Change, History

from support.builders import HistoryBuilder, ticks

INVARIANT = get("replicas-converge")
OPTIONS = CheckOptions(converge_timeout=60)


def scaled_set() -> HistoryBuilder:
    """S1 created with 2 replicas, converged at 3, scaled to 1 by us at 10."""
    b = HistoryBuilder()
    b.at(0).claimset("S1", replicas=2)
    b.at(3).claimset("S1", status_replicas=2, ready=2)
    b.at(10).claimset("S1", replicas=1, by="scale_claimset", params={"replicas": 1})
    return b


def test_converging_in_time_passes():
    b = scaled_set()
    b.at(11).claimset("S1", status_replicas=1, ready=1)
    ticks(b, 12, 100, every=5)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert (verdict.status, verdict.note) == ("pass", "2 scale change(s) seen")


def test_status_stuck_after_a_scale_fails():
    b = scaled_set()
    ticks(b, 12, 100, every=5)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert verdict.violation.t == 70
    assert verdict.violation.objects == ("CNClaimSet/S1",)
    assert "spec.replicas=1, status.replicas=2, readyReplicas=2" in verdict.violation.message


def test_ready_replicas_must_converge_too():
    b = scaled_set()
    b.at(11).claimset("S1", status_replicas=1, ready=0)
    ticks(b, 12, 100, every=5)
    assert INVARIANT.check(b.build(), OPTIONS).violation.t == 70


def test_creation_counts_as_a_change():
    b = HistoryBuilder()
    b.at(0).claimset("S1", replicas=2)
    b.at(5).claimset("S1", status_replicas=1, ready=1)
    ticks(b, 6, 100, every=5)
    assert INVARIANT.check(b.build(), OPTIONS).violation.t == 60


def test_claim_set_being_deleted_is_not_judged():
    b = scaled_set()
    b.at(12).claimset("S1", deleting=True)
    ticks(b, 13, 100, every=5)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_rescale_before_converging_keeps_the_first_start():
    b = scaled_set()
    b.at(50).claimset("S1", replicas=0, by="scale_claimset", params={"replicas": 0})
    b.at(75).claimset("S1", status_replicas=0, ready=0)
    ticks(b, 76, 100, every=5)
    assert INVARIANT.check(b.build(), OPTIONS).violation.t == 70


def _raw(seq: int, t: float, event: str, obj: dict) -> Change:
    return Change(seq, t, "CNClaimSet", event, "ns", "S1", seq, obj)


def test_absent_counts_read_as_zero():
    history = History(
        [_raw(1, 0, "ADDED", {"metadata": {"name": "S1"}}), _raw(2, 100, "MODIFIED", {})]
    )
    assert INVARIANT.check(history, OPTIONS).status == "pass"


def test_a_deleted_set_recreated_under_its_name_is_judged_afresh():
    b = scaled_set()
    b.at(11).claimset("S1", status_replicas=1, ready=1)
    b.at(20).delete("CNClaimSet", "S1")
    b.at(30).claimset("S1", replicas=1, status_replicas=0, ready=0)
    ticks(b, 31, 100, every=5)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.t == 90
    assert verdict.violation.seq == next(e.seq for e in b.entries if e.t > 90)
    assert verdict.violation.message == (
        "CNClaimSet S1 did not converge within 60s: spec.replicas=1, status.replicas=0, "
        "readyReplicas=0"
    )


def test_a_deletion_after_the_deleting_change_is_harmless():
    b = scaled_set()
    b.at(12).claimset("S1", deleting=True)
    b.at(13).delete("CNClaimSet", "S1")
    ticks(b, 15, 100, every=5)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_a_status_falling_back_without_a_new_spec_is_not_a_scale():
    b = scaled_set()
    b.at(11).claimset("S1", status_replicas=1, ready=1)
    b.at(20).claimset("S1", ready=0)  # a claim lost its pod: not this invariant's business
    ticks(b, 21, 100, every=5)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_a_deadline_passed_by_now_fails():
    checker = IncrementalChecker(OPTIONS, (INVARIANT,))
    b = scaled_set()
    checker.feed(b.entries)
    (late,) = checker.poll(70.5)
    assert (late.violation.t, late.violation.seq) == (70, b.entries[-1].seq)
