"""migration-completes: a migration ends (or its claim is deleted) within the timeout."""

from mochaos.config import CheckOptions
from mochaos.invariants import IncrementalChecker, evaluate, get

from support.builders import HistoryBuilder, bind, ticks

INVARIANT = get("migration-completes")
OPTIONS = CheckOptions(migration_timeout=100)


def migration() -> HistoryBuilder:
    """X migrates from A to B at t=10; the store moves to B at 11; A drains from 25."""
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(10).claim("X", pod="B", source="A", by="request_migration")
    b.at(10.5).pod("B", phase="Bound", claimed_by="X")
    b.at(11).claim("X", store="B")
    b.at(25).pod("A", phase="Draining", claimed_by=None)
    return b


def test_no_migration_is_skipped():
    b = HistoryBuilder()
    bind(b, "X", "A")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert (verdict.status, verdict.note) == ("skipped", "no migration happened")


def test_migration_never_finishing_fails_at_its_deadline():
    b = migration()
    ticks(b, 30, 130, every=5)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert verdict.violation.t == 110
    assert verdict.violation.objects == ("CNClaim/X", "Pod/A", "Pod/B")
    assert "sourcePod=A" in verdict.violation.message


def test_completed_migration_passes():
    b = migration()
    b.at(40).pod("A", phase="Idle")
    b.at(45).claim("X", source=None)
    ticks(b, 50, 200, every=5)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert (verdict.status, verdict.note) == ("pass", "1 migration(s) seen")


def test_source_cleared_without_the_store_moving_is_not_complete():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(10).claim("X", pod="B", source="A", by="request_migration")
    b.at(45).claim("X", source=None)
    ticks(b, 50, 200, every=5)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.t == 110
    assert "store.string=A" in verdict.violation.message


def test_deleted_claim_ends_the_migration():
    b = migration()
    b.at(30).claim("X", deleting=True)
    b.at(32).delete("CNClaim", "X")
    ticks(b, 35, 200, every=5)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_deadline_not_yet_passed_is_not_reported():
    b = migration()
    ticks(b, 30, 110, every=5)
    assert evaluate(b.build(), OPTIONS, final=False)[5].status == "pass"
    b.at(111).marker("settled")
    assert evaluate(b.build(), OPTIONS, final=False)[5].status == "fail"


def test_message_says_cleared_and_dashes_for_what_is_unset():
    b = HistoryBuilder()
    b.claim("X", pod="B", source="A")
    b.at(5).claim("X", pod=None, source=None, store="A")  # not complete: store not on podName
    ticks(b, 101, 101)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.seq == b.entries[-1].seq
    assert verdict.violation.message == (
        "migration of CNClaim X from A to B not finished 100s after it started "
        "(sourcePod=cleared, podName=-, store.string=A)"
    )
    b = HistoryBuilder()
    b.claim("X", pod="B", source="A")
    ticks(b, 101, 101)
    assert INVARIANT.check(b.build(), OPTIONS).violation.message.endswith(
        "(sourcePod=A, podName=B, store.string=-)"
    )


def test_a_deadline_passed_by_now_fails_and_no_migration_stays_skipped():
    checker = IncrementalChecker(OPTIONS, (INVARIANT,))
    checker.feed(migration().entries)
    assert checker.verdicts(now=110)[0].status == "pass"
    (late,) = checker.poll(110.5)
    assert late.violation.t == 110
    empty = IncrementalChecker(OPTIONS, (INVARIANT,))
    assert empty.verdicts(now=1000)[0].status == "skipped"
