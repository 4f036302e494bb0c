"""scalein-skips-migrating: scale-in never deletes a migrating claim while others exist (B2, B6)."""

from mochaos.config import CheckOptions
from mochaos.invariants import IncrementalChecker, evaluate, get

from support.builders import HistoryBuilder, bind, ticks

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


# -- confirmation at once from the scale intent ----------------------------------------


def intent_set() -> HistoryBuilder:
    """Set S1 has X (migrating A -> B) and Y (bound to C); our scale to 1 is recorded first."""
    b = HistoryBuilder()
    b.at(0).claimset("S1", replicas=2, status_replicas=2, ready=2)
    bind(b, "X", "A")
    bind(b, "Y", "C")
    b.at(10).claim("X", pod="B", source="A", by="request_migration")
    b.at(10.5).pod("B", phase="Bound", claimed_by="X")
    b.at(30).scale("S1", 1)
    return b


def running(b: HistoryBuilder) -> str:
    return evaluate(b.build(), OPTIONS, final=False)[INDEX].status


def test_deleting_the_migrating_claim_fails_at_once_when_the_target_keeps_it():
    b = intent_set()
    bad = b.at(30.2).claim("X", deleting=True)
    checker = IncrementalChecker(OPTIONS, (INVARIANT,))
    (verdict,) = checker.feed(b.entries)  # no later entry needed: no window to wait for
    assert (verdict.violation.t, verdict.violation.seq) == (30.2, bad.seq)
    assert verdict.violation.objects == ("CNClaim/X", "Pod/A", "Pod/B", "CNClaim/Y")
    assert verdict.violation.message.endswith(
        "of claim set S1 was kept; confirmed at once: scale target 1 keeps all 1 migrating claim(s)"
    )
    # A later pass deleting Y too does not excuse it (the window rule would have).
    b.at(32.2).claim("Y", deleting=True)
    ticks(b, 33, 50)
    later = INVARIANT.check(b.build(), OPTIONS).violation
    assert (later.seq, later.objects, later.message) == (
        bad.seq, verdict.violation.objects, verdict.violation.message,
    )  # fmt: skip


def test_deleting_the_other_claim_passes_with_an_intent():
    b = intent_set()
    b.at(30.2).claim("Y", deleting=True)
    ticks(b, 31, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_our_own_delete_recorded_before_the_write_passes():
    b = intent_set()
    b.at(30.1).action("delete_claim", kind="CNClaim", name="X", intent=True)
    b.at(30.2).claim("X", deleting=True)
    assert running(b) == "pass"


def test_a_target_below_the_migrating_claims_waits_for_the_window():
    b = intent_set()
    b.at(20).claim("Y", pod="D", source="C", by="request_migration")  # now 2 migrate
    b.claim("W", pod="E", phase="Bound", store="E", claimset="S1")
    b.at(30.1).scale("S1", 1)
    b.at(30.2).claim("X", deleting=True)
    assert running(b) == "pass"
    ticks(b, 31, 40)
    assert INVARIANT.check(b.build(), OPTIONS).status == "fail"  # W survived the window


def test_the_epilogue_scale_to_zero_waits_and_passes():
    b = intent_set()
    b.at(40).marker("epilogue")
    b.scale("S1", 0)
    b.at(40.1).claim("X", deleting=True)
    assert running(b) == "pass"
    b.at(40.15).claim("Y", deleting=True)
    ticks(b, 41, 60)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_an_earlier_lower_target_may_still_be_worked_towards():
    b = intent_set()
    b.at(30.05).scale("S1", 0)
    b.at(30.1).scale("S1", 2)
    b.at(30.2).claim("X", deleting=True)
    assert running(b) == "pass"


def test_an_intent_recorded_after_the_deletion_does_not_count():
    b = migrating_set()
    b.at(30.2).claim("X", deleting=True)
    b.at(30.3).scale("S1", 1)
    assert running(b) == "pass"
    ticks(b, 31, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "fail"


def test_a_migration_that_ended_since_the_scale_still_counts_as_migrating():
    b = intent_set()
    b.at(5).claim("W", pod="E", phase="Bound", store="E", source="F", claimset="S1")
    b.at(30.1).claim("W", source=None)  # the operator's cache may still see it migrating
    b.at(30.2).claim("X", deleting=True)
    assert running(b) == "pass"


def test_a_set_being_deleted_waits_for_the_window():
    b = intent_set()
    b.at(30.1).claimset("S1", deleting=True)
    b.at(30.2).claim("X", deleting=True)
    assert running(b) == "pass"


def test_a_scale_of_another_set_does_not_count():
    b = migrating_set()
    b.at(30.1).claimset("S2", replicas=5)
    b.scale("S2", 5)
    b.at(30.2).claim("X", deleting=True)
    assert running(b) == "pass"


# -- the window, our own writes, and which deletion is reported --------------------------


def test_the_window_is_five_seconds_at_time_scale_one():
    b = migrating_set()
    b.at(30).claim("X", deleting=True)
    b.at(35).claim("Y", deleting=True)  # on the window's edge: still in it
    ticks(b, 36, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"
    b = migrating_set()
    b.at(30).claim("X", deleting=True)
    b.at(35.5).claim("Y", deleting=True)
    ticks(b, 36, 50)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.message.endswith("non-migrating CNClaim Y of claim set S1 was kept")


def test_running_verdicts_wait_until_now_is_past_the_window():
    b = migrating_set()
    b.at(30).claim("X", deleting=True)
    checker = IncrementalChecker(OPTIONS, (INVARIANT,))
    checker.feed(b.entries)
    assert checker.poll(30.1) == []
    assert checker.poll(35) == []
    (late,) = checker.poll(35.1)
    assert late.violation.t == 30


def test_a_deletion_keeps_the_judge_open_until_an_entry_closes_its_window():
    b = migrating_set()
    checker = IncrementalChecker(OPTIONS, (INVARIANT,))
    checker.feed(b.entries)
    assert checker.undecided(30) == []
    b.at(30).claim("X", deleting=True)
    checker.feed(b.entries[-1:])
    assert checker.undecided(31) == ["scalein-skips-migrating open"]  # Y may still go
    ticks(b, 36, 36)
    checker.feed(b.entries[-1:])
    assert checker.verdicts()[0].failed
    assert checker.undecided(36) == []


def test_a_deletion_seen_only_as_deleted_counts():
    b = migrating_set()
    b.at(30.2).delete("CNClaim", "X")  # no finalizer: gone at once
    ticks(b, 31, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "fail"


def test_a_deletion_counts_once_at_its_first_deleting_change():
    b = migrating_set()
    b.at(30.2).claim("X", deleting=True)
    b.at(31).claim("Y", deleting=True)
    b.at(38).claim("V", pod="E", phase="Bound", store="E", claimset="S1")
    b.at(40).claim("X", finalizers=[])  # X still deleting; V was not there to spare
    ticks(b, 41, 60)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_a_deletion_is_ours_when_a_record_with_its_version_comes_later():
    b = migrating_set()
    gone = b.at(30.2).claim("X", deleting=True)
    b.at(30.3).action("evict_claim", kind="CNClaim", name="X", write_rv=gone.rv)
    ticks(b, 31, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_a_namespace_deletion_at_the_same_version_or_time_is_ours():
    b = migrating_set()
    gone = b.at(30.2).claim("X", deleting=True)
    b.at(30.3).action("delete_namespace", kind="Namespace", name="ns", write_rv=gone.rv)
    ticks(b, 31, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"
    b = migrating_set()
    b.at(30.2).action("delete_namespace", kind="Namespace", name="ns")
    b.claim("X", deleting=True)
    ticks(b, 31, 50)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_the_spared_siblings_are_those_at_judging_time_and_stay_so():
    b = migrating_set()
    b.at(29).claim("V", pod="E", phase="Bound", store="E", claimset="S1")
    b.at(30.2).claim("X", deleting=True)
    b.at(40).claim("Y", deleting=True)  # after the window: it had been spared
    ticks(b, 41, 50)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.objects == ("CNClaim/X", "Pod/A", "Pod/B", "CNClaim/V", "CNClaim/Y")
    assert "non-migrating CNClaim V, Y of claim set S1 was kept" in verdict.violation.message


def test_a_migrating_claim_without_a_target_is_reported_with_a_question_mark():
    b = migrating_set()
    b.at(20).claim("X", pod=None)
    b.at(30.2).claim("X", deleting=True)
    ticks(b, 36, 40)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.objects == ("CNClaim/X", "Pod/A", "CNClaim/Y")
    assert "while migrating (A -> ?)" in verdict.violation.message


def test_the_earliest_deletion_is_reported_whichever_was_confirmed_first():
    b = migrating_set()
    b.at(20).claim("W", pod="E", source="F", phase="Bound", claimset="S1")
    first = b.at(30.2).claim("W", deleting=True)  # no intent yet: waits for its window
    b.at(31).scale("S1", 2)
    b.at(31.5).claim("X", deleting=True)  # confirmed at once
    checker = IncrementalChecker(OPTIONS, (INVARIANT,))
    checker.feed(b.entries)
    assert checker.verdicts()[0].violation.seq != first.seq
    assert checker.verdicts(final=True)[0].violation.seq == first.seq


def test_a_confirmed_deletion_is_cleared_when_our_own_delete_record_comes_later():
    b = intent_set()
    b.at(30.2).claim("X", deleting=True)
    b.at(30.3).action("delete_claim", kind="CNClaim", name="X")
    assert running(b) == "pass"


def test_a_cleared_deletion_does_not_hide_a_later_one_at_settle():
    b = migrating_set()
    b.at(20).claim("W", pod="E", source="F", phase="Bound", claimset="S1")
    b.at(30.1).claim("W", deleting=True)
    b.at(30.15).action("delete_claim", kind="CNClaim", name="W")
    bad = b.at(30.2).claim("X", deleting=True)
    verdict = evaluate(b.build(), OPTIONS, final=True)[INDEX]
    assert verdict.violation.seq == bad.seq


def test_changes_of_a_sibling_after_the_scale_do_not_count_as_migrations():
    b = intent_set()
    b.at(30.1).claim("Y", phase="Bound", store="C2")
    b.at(30.2).claim("X", deleting=True)
    assert running(b) == "fail"


def test_a_migration_that_ended_and_restarted_counts_once():
    b = migrating_set()  # its scale was recorded after the write: no intent
    b.at(5).claim("W", pod="E", phase="Bound", store="E", source="F", claimset="S1")
    b.at(30).scale("S1", 2)
    b.at(30.05).claim("W", source=None)
    b.at(30.1).claim("W", source="F")  # migrating again: X and W are the 2 migrating
    b.at(30.2).claim("X", deleting=True)
    assert running(b) == "fail"
