"""pod-claim-agreement: after settle, Bound pods and live Bound claims name each other."""

from mochaos.config import CheckOptions
from mochaos.invariants import evaluate, get

from support.builders import HistoryBuilder, bind

INVARIANT = get("pod-claim-agreement")
OPTIONS = CheckOptions()


def test_consistent_final_state_passes():
    b = HistoryBuilder()
    bind(b, "X", "A")
    bind(b, "Y", "C")
    b.pod("D", phase="Idle")
    b.pod("E", phase="Draining")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "pass"
    assert verdict.bugs == ("B5",)


def test_skipped_while_running():
    b = HistoryBuilder()
    b.pod("B", phase="Bound")
    verdict = INVARIANT.check(b.build(), OPTIONS, final=False)
    assert (verdict.status, verdict.note) == ("skipped", "evaluated at settle")
    assert evaluate(b.build(), OPTIONS, final=False)[8] == verdict
    assert evaluate(b.build(), OPTIONS, final=True)[8].status == "fail"


def test_label_released_to_nobody_fails_at_the_release():
    """The PR #592 hole: X's Finalize strips B's label although Z still holds B."""
    b = HistoryBuilder()
    bind(b, "X", "A")
    bind(b, "Z", "B", claimset="S2")
    b.at(10).claim("X", pod="B", source="A", by="request_migration")
    b.at(10.5).pod("B", claimed_by="X")
    b.at(30).claim("X", deleting=True)
    release = b.at(30.1).pod("B", claimed_by=None)
    b.at(30.2).delete("CNClaim", "X")
    b.at(40).pod("A", phase="Idle", claimed_by=None)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert (verdict.violation.t, verdict.violation.seq) == (30.1, release.seq)
    assert verdict.violation.objects == ("Pod/B", "CNClaim/Z")
    assert "pod B is Bound to CNClaim Z but claimed-by=-" in verdict.violation.message


def test_two_live_claims_on_one_pod_fail():
    b = HistoryBuilder()
    bind(b, "X", "A")
    bind(b, "Z", "B", claimset="S2")
    b.at(10).claim("X", pod="B", source="A", by="request_migration")
    b.at(10.5).pod("B", claimed_by="X")
    b.at(40).pod("A", phase="Idle", claimed_by=None)
    b.at(45).claim("X", source=None, store="B")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.objects[0] == "CNClaim/Z"
    assert verdict.violation.t == 10.5
    assert "disagreement(s)" in verdict.violation.message


def test_bound_claim_on_a_missing_pod_fails_at_the_deletion():
    b = HistoryBuilder()
    bind(b, "X", "A")
    gone = b.at(10).delete("Pod", "A")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.seq == gone.seq
    assert verdict.violation.objects == ("CNClaim/X", "Pod/A")
    assert "CNClaim X is Bound but pod A does not exist" in verdict.violation.message


def _failure(b: HistoryBuilder) -> tuple[tuple[str, ...], str]:
    verdict = INVARIANT.check(b.build(), OPTIONS)
    return verdict.violation.objects, verdict.violation.message


def test_a_deleting_bound_claim_is_not_judged():
    b = HistoryBuilder()
    b.claim("X", pod="A", phase="Bound")
    b.claim("X", deleting=True)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_each_claim_side_disagreement_is_named():
    b = HistoryBuilder()
    b.claim("X", phase="Bound")
    assert _failure(b) == (
        ("CNClaim/X",),
        "CNClaim X is Bound but it has no spec.podName (1 disagreement(s) in the final state)",
    )
    b = HistoryBuilder()
    b.pod("A", phase="Idle")
    b.claim("X", pod="A", phase="Bound")
    assert _failure(b) == (
        ("CNClaim/X", "Pod/A"),
        "CNClaim X is Bound but pod A is in phase Idle (1 disagreement(s) in the final state)",
    )
    b = HistoryBuilder()
    b.pod("A", phase=None)
    b.claim("X", pod="A", phase="Bound")
    assert _failure(b)[1].startswith("CNClaim X is Bound but pod A is in phase - (1 ")


def test_each_pod_side_disagreement_is_named():
    b = HistoryBuilder()
    b.pod("B", phase="Bound")
    assert _failure(b) == (
        ("Pod/B",),
        "pod B is Bound (claimed-by=-) but no live CNClaim names it "
        "(1 disagreement(s) in the final state)",
    )
    b = HistoryBuilder()
    bind(b, "X", "B")
    b.claim("Z", pod="B", phase="Bound")
    b.pod("B", claimed_by="W")
    assert _failure(b) == (
        ("Pod/B", "CNClaim/X", "CNClaim/Z", "CNClaim/W"),
        "pod B is Bound and named by live CNClaims X, Z (3 disagreement(s) in the final state)",
    )
    b = HistoryBuilder()
    bind(b, "Z", "B")
    b.pod("A", phase="Bound", claimed_by="Z")
    b.claim("X", pod="A", phase="Bound")
    assert _failure(b) == (
        ("Pod/A", "CNClaim/X", "CNClaim/Z"),
        "pod A is Bound to CNClaim X but claimed-by=Z (2 disagreement(s) in the final state)",
    )
