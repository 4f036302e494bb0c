"""single-binding: the operator never adds a reference to a pod another live claim holds."""

from mochaos.config import CheckOptions
from mochaos.invariants import IncrementalChecker, get
from mochaos.observe.history import ActionRecord

from support.builders import HistoryBuilder, bind

INVARIANT = get("single-binding")
OPTIONS = CheckOptions()


def migration_onto_held_pod() -> HistoryBuilder:
    """The incident's double reference: the agent points X at B, which Z holds."""
    b = HistoryBuilder()
    bind(b, "X", "A")
    bind(b, "Z", "B", claimset="S2")
    params = {"source": "A", "target": "B"}
    b.at(10).claim("X", pod="B", source="A", by="request_migration", params=params)
    return b


def test_injected_double_reference_and_sync_relabel_pass():
    b = migration_onto_held_pod()
    b.at(10.5).pod("B", claimed_by="X")
    b.at(10.6).claim("X", store="B")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "pass"
    assert verdict.bugs == ("#581",)


def test_operator_label_for_a_claim_not_naming_the_pod_fails():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(1).pod("B", phase="Idle")
    b.at(2).claim("W", phase="Pending", claimset="S1")
    b.at(10).claim("X", pod="B", source="A", by="request_migration")
    bad = b.at(10.2).pod("B", phase="Bound", claimed_by="W")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert (verdict.violation.t, verdict.violation.seq) == (10.2, bad.seq)
    assert verdict.violation.objects == ("CNClaim/W", "Pod/B", "CNClaim/X")
    assert "live CNClaim X already holds it" in verdict.violation.message


def test_operator_spec_bind_of_a_held_pod_fails():
    b = HistoryBuilder()
    bind(b, "Z", "B", claimset="S2")
    b.at(2).claim("W", phase="Pending", claimset="S1")
    bad = b.at(10).claim("W", pod="B")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.seq == bad.seq
    assert verdict.violation.objects == ("CNClaim/W", "Pod/B", "CNClaim/Z")
    assert "spec.podName of CNClaim W set to B" in verdict.violation.message


def test_same_write_attributed_to_us_passes():
    b = HistoryBuilder()
    bind(b, "Z", "B", claimset="S2")
    b.at(2).claim("W", phase="Pending", claimset="S1")
    b.at(10).claim("W", pod="B", by="request_migration")
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_a_deleting_holder_does_not_hold():
    b = HistoryBuilder()
    bind(b, "Z", "B", claimset="S2")
    b.at(5).claim("Z", deleting=True)
    b.at(6).claim("W", phase="Pending", claimset="S1")
    b.at(10).pod("B", claimed_by="W")
    b.at(10.1).claim("W", pod="B", phase="Bound")
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_relabel_back_to_a_holder_whose_spec_names_the_pod_passes():
    """Z's Sync takes B back from X (both specs name B): Z's label follows Z's own spec."""
    b = migration_onto_held_pod()
    b.at(10.5).pod("B", claimed_by="X")
    b.at(20).pod("B", claimed_by="Z")
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_a_change_that_keeps_the_pod_s_label_is_not_a_new_reference():
    b = HistoryBuilder()
    b.pod("P", phase="Bound", claimed_by="Z")  # a stale label: Z's spec names Q
    b.claim("Z", pod="Q", phase="Bound")
    b.claim("W", pod="P", phase="Bound", by="request_migration")  # W holds P
    b.at(5).pod("P", phase="Draining")  # still claimed-by=Z
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_a_label_for_a_second_holder_names_every_holder():
    b = HistoryBuilder()
    b.pod("P", phase="Idle")
    b.claim("X", pod="P", phase="Bound", by="request_migration")
    b.claim("Y", pod="P", phase="Bound", by="request_migration")
    b.claim("W", phase="Pending")
    bad = b.at(5).pod("P", phase="Bound", claimed_by="W")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.seq == bad.seq
    assert verdict.violation.objects == ("CNClaim/W", "Pod/P", "CNClaim/X", "CNClaim/Y")
    assert verdict.violation.message == (
        "pod P labelled claimed-by=W while its spec.podName is not P, but live CNClaim X, Y "
        "already holds it"
    )


def test_a_deletion_seen_without_its_object_s_history_is_no_reference():
    """After a relist only the DELETED event of a claim may be seen."""
    b = HistoryBuilder()
    bind(b, "Z", "B")
    b.claim("X", pod="B")
    b.entries.pop()  # X's ADDED was missed by the watch
    b.delete("CNClaim", "X")
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_the_first_suspect_not_ours_is_the_verdict():
    b = HistoryBuilder()
    bind(b, "Z", "B")
    suspects = [b.at(t).claim(f"W{t}", pod="B") for t in (1, 2, 3)]
    checker = IncrementalChecker(OPTIONS, (INVARIANT,))
    checker.feed(b.entries)
    assert checker.verdicts()[0].violation.seq == suspects[0].seq
    late = [
        ActionRecord(100 + i, 4.0, "request_migration", "CNClaim", s.name, write_rv=s.rv)
        for i, s in enumerate(suspects)
    ]
    checker.feed(late[:1])
    assert checker.verdicts()[0].violation.seq == suspects[1].seq
    checker.feed(late[1:2])
    assert checker.verdicts()[0].violation.seq == suspects[2].seq
    checker.feed(late[2:])
    assert checker.verdicts()[0].status == "pass"
