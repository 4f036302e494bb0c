"""bound-has-pod: a Bound claim's pod exists; a Lost claim keeps no spec.podName (B3)."""

from mochaos.config import CheckOptions
from mochaos.invariants import get

from support.builders import HistoryBuilder, bind, ticks

INVARIANT = get("bound-has-pod")
OPTIONS = CheckOptions(grace=15)


def pod_deleted() -> HistoryBuilder:
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(10).delete("Pod", "A", by="delete_pod")
    return b


def test_bound_claim_whose_pod_is_gone_fails_after_grace():
    b = pod_deleted()
    ticks(b, 12, 40)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert verdict.bugs == ("B3",)
    assert verdict.violation.t == 25
    assert verdict.violation.seq == next(e.seq for e in b.entries if e.t > 25)
    assert verdict.violation.objects == ("CNClaim/X", "Pod/A")
    assert verdict.violation.message == (
        "CNClaim X Bound on a pod that does not exist (A) for over 15s"
    )


def test_lost_claim_keeping_its_pod_name_fails_after_grace():
    b = pod_deleted()
    b.at(12).claim("X", phase="Lost")
    ticks(b, 14, 40)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.t == 27
    assert "Lost but still has spec.podName" in verdict.violation.message


def test_lost_claim_clearing_its_pod_name_passes():
    b = pod_deleted()
    b.at(12).claim("X", phase="Lost")
    b.at(13).claim("X", pod=None)
    b.at(14).claim("X", phase="Pending")
    ticks(b, 16, 60)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_pod_coming_back_within_grace_passes():
    b = pod_deleted()
    b.at(20).pod("A", phase="Bound", claimed_by="X")
    ticks(b, 22, 60)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_deleting_claim_is_not_judged():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(9).claim("X", deleting=True)
    b.at(10).delete("Pod", "A")
    ticks(b, 12, 60)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"
