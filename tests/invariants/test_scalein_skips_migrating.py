"""scalein-skips-migrating: scale-in never deletes a migrating claim while others exist (B2, B6)."""

from mochaos.invariants import evaluate, get
from mochaos.types import CheckOptions

from .builders import HistoryBuilder, bind, ticks

INVARIANT = get("scalein-skips-migrating")
OPTIONS = CheckOptions()
INDEX = 4  # position in ALL / evaluate()


def migrating_set() -> HistoryBuilder:
    """Set S1 has X (migrating A -> B) and Y (bound to C, not migrating)."""
    b = HistoryBuilder()
    b.at(0).claimset("S1", replicas=2, status_replicas=2, ready=2)
    bind(b, "X", "A")
    bind(b, "Y", "C")
    b.at(10).claim("X", pod="B", source="A", by="request_migration")
    b.at(10.5).pod("B", phase="Bound", claimed_by="X")
    b.at(30).claimset("S1", replicas=1, by="scale_claimset", params={"replicas": 1})
    return b


def test_operator_deleting_the_migrating_claim_fails():
    b = migrating_set()
    bad = b.at(30.2).claim("X", deleting=True)
    ticks(b, 31, 50)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert verdict.bugs == ("B2", "B6")
    assert (verdict.violation.t, verdict.violation.seq) == (30.2, bad.seq)
    assert verdict.violation.objects == ("CNClaim/X", "Pod/A", "Pod/B", "CNClaim/Y")
    assert "non-migrating CNClaim Y of claim set S1" in verdict.violation.message


def test_operator_deleting_the_other_claim_passes():
    b = migrating_set()
    b.at(30.2).claim("Y", deleting=True)
    ticks(b, 31, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_our_own_delete_passes():
    b = migrating_set()
    b.at(30.2).claim("X", deleting=True, by="delete_claim")
    ticks(b, 31, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_our_delete_recorded_after_the_change_passes():
    b = migrating_set()
    b.at(30.2).claim("X", deleting=True)
    b.at(30.3).action("delete_claim", kind="CNClaim", name="X")
    ticks(b, 31, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_namespace_deletion_passes():
    b = migrating_set()
    b.at(30.1).action("delete_namespace", kind="Namespace", name="chaos-test", write_rv=1)
    b.at(30.2).claim("X", deleting=True)
    ticks(b, 31, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_epilogue_scale_to_zero_passes():
    b = migrating_set()
    b.at(40).marker("epilogue")
    b.claimset("S1", replicas=0, by="scale_claimset", params={"replicas": 0})
    b.at(40.1).claim("X", deleting=True)
    b.at(40.15).claim("Y", deleting=True)
    ticks(b, 41, 60)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_sibling_in_another_set_or_also_migrating_does_not_count():
    b = migrating_set()
    b.at(20).claim("Y", claimset="S2")
    b.at(30.2).claim("X", deleting=True)
    ticks(b, 31, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"
    b = migrating_set()
    b.at(20).claim("Y", pod="D", source="C", by="request_migration")
    b.at(30.2).claim("X", deleting=True)
    ticks(b, 31, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_window_scales_with_time_scale():
    b = migrating_set()
    b.at(30.2).claim("X", deleting=True)
    b.at(32.2).claim("Y", deleting=True)
    ticks(b, 33, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"
    fast = CheckOptions(time_scale=0.1)
    assert INVARIANT.check(b.build(), fast).status == "fail"


def test_open_window_waits_while_running_and_is_judged_at_the_end_when_final():
    b = migrating_set()
    b.at(30.2).claim("X", deleting=True)
    b.at(31).marker("settled")
    history = b.build()
    running = evaluate(history, OPTIONS, final=False)[INDEX]
    assert running.invariant == INVARIANT.id
    assert running.status == "pass"
    assert evaluate(history, OPTIONS, final=True)[INDEX].status == "fail"


def test_namespace_deletion_without_write_rv_spares_only_later_deletions():
    b = migrating_set()
    b.at(30.2).claim("X", deleting=True)
    b.at(45).action("delete_namespace", kind="Namespace", name="chaos-test")
    ticks(b, 46, 60)
    assert INVARIANT.check(b.build(), OPTIONS).status == "fail"
