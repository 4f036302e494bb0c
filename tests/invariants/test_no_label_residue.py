"""no-label-residue: claimed-by labels name a live claim that references the pod (B5, B4)."""

from mochaos.config import CheckOptions
from mochaos.invariants import get

from support.builders import HistoryBuilder, bind, ticks

INVARIANT = get("no-label-residue")
OPTIONS = CheckOptions(grace=15)


def test_label_of_a_deleted_claim_left_on_the_pod_fails_after_grace():
    b = HistoryBuilder()
    bind(b, "X", "B")
    b.at(10).claim("X", deleting=True)
    b.at(12).delete("CNClaim", "X")
    ticks(b, 14, 40)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert verdict.bugs == ("B5", "B4")
    assert verdict.violation.t == 25
    assert verdict.violation.objects == ("Pod/B", "CNClaim/X")
    assert "CNClaim X does not exist" in verdict.violation.message


def test_normal_finalize_window_shorter_than_grace_passes():
    b = HistoryBuilder()
    bind(b, "X", "B")
    b.at(10).claim("X", deleting=True)
    b.at(12).pod("B", phase="Draining", claimed_by=None)
    b.at(14).delete("CNClaim", "X")
    ticks(b, 16, 60)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def label_flaps(*, gap: bool) -> HistoryBuilder:
    """B carries a label for a claim that does not exist from 10 to 30, cleared at 20 if gap."""
    b = HistoryBuilder()
    b.at(0).pod("B", phase="Idle")
    b.at(10).pod("B", claimed_by="W")
    if gap:
        b.at(20).pod("B", claimed_by=None)
        b.at(21).pod("B", claimed_by="W")
    b.at(30).pod("B", claimed_by=None)
    ticks(b, 32, 60)
    return b


def test_breach_must_be_uninterrupted():
    assert INVARIANT.check(label_flaps(gap=True).build(), OPTIONS).status == "pass"
    uninterrupted = INVARIANT.check(label_flaps(gap=False).build(), OPTIONS)
    assert uninterrupted.status == "fail"
    assert uninterrupted.violation.t == 25


def test_migration_source_is_a_reference():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(10).claim("X", pod="B", source="A", by="request_migration")
    b.at(11).pod("B", phase="Bound", claimed_by="X")
    ticks(b, 12, 80)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_label_for_a_live_claim_that_points_elsewhere_fails():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(5).pod("B", phase="Bound", claimed_by="X")
    ticks(b, 6, 30)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.t == 20
    assert "CNClaim X does not reference it" in verdict.violation.message


def test_claim_moving_away_starts_the_breach():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(5).claim("X", pod="C")
    ticks(b, 6, 30)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.t == 20
    assert verdict.violation.objects == ("Pod/A", "CNClaim/X")


def test_the_breach_clock_keeps_running_across_changes_of_the_same_label():
    b = HistoryBuilder()
    b.at(0).pod("B", phase="Idle")
    b.at(10).pod("B", claimed_by="W")
    b.at(20).pod("B", phase="Bound")  # still labelled W
    ticks(b, 22, 40)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.t == 25
    assert verdict.violation.seq == next(e.seq for e in b.entries if e.t > 25)
    assert verdict.violation.message == (
        "pod B labelled claimed-by=W for over 15s while CNClaim W does not exist"
    )


def test_a_labelled_pod_that_goes_away_ends_its_breach():
    b = HistoryBuilder()
    b.at(0).pod("B", phase="Idle", claimed_by="W")
    b.at(10).delete("Pod", "B")
    ticks(b, 12, 40)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_a_deleting_claim_s_label_says_so():
    b = HistoryBuilder()
    bind(b, "X", "B")
    b.at(10).claim("X", deleting=True)
    ticks(b, 12, 40)
    assert INVARIANT.check(b.build(), OPTIONS).violation.message == (
        "pod B labelled claimed-by=X for over 15s while CNClaim X is being deleted"
    )


def binding_for(seconds: float, *, then: str) -> HistoryBuilder:
    """X's bind labels B (Bound, claimed-by=X) and cannot name it for ``seconds`` (HAKeeper
    unreachable); ``then`` "binds" (X names B) or "moves on" (X binds C, B keeps its label)."""
    b = HistoryBuilder()
    b.at(0).pod("B", phase="Idle")
    b.at(0).pod("C", phase="Idle")
    b.at(1).claim("X")
    b.at(2).pod("B", phase="Bound", claimed_by="X")
    b.at(3).claim("X", phase="Pending")
    if then == "binds":
        b.at(2 + seconds).claim("X", pod="B", phase="Bound")
    else:
        b.at(2 + seconds).pod("C", phase="Bound", claimed_by="X")
        b.at(2 + seconds).claim("X", pod="C", phase="Bound")
    ticks(b, 3 + seconds, 3 + seconds + 40)
    return b


def test_a_bind_that_cannot_name_its_pod_yet_leaves_no_residue():
    # green: a bind held up for longer than the grace (HAKeeper unreachable) still ends on B
    assert INVARIANT.check(binding_for(30, then="binds").build(), OPTIONS).status == "pass"
    # red: the claim bound another pod; B's label is residue from then on
    moved_on = INVARIANT.check(binding_for(30, then="moves on").build(), OPTIONS)
    assert moved_on.status == "fail"
    assert moved_on.violation.t == 32 + 15
    assert "CNClaim X does not reference it" in moved_on.violation.message
