"""finalizer-completes: a deleting claim is gone within finalize_timeout (B1)."""

from mochaos.config import CheckOptions
from mochaos.ctrl.objects import CLAIM_FINALIZER
from mochaos.invariants import IncrementalChecker, evaluate, get

from support.builders import HistoryBuilder, bind

INVARIANT = get("finalizer-completes")
OPTIONS = CheckOptions(finalize_timeout=60)


def stuck_finalize(*, until: float) -> HistoryBuilder:
    """X is deleted at t=10 while B (claimed-by=X) is held; Finalize retries every 2 s."""
    b = HistoryBuilder()
    bind(b, "X", "B")
    b.at(10).claim("X", deleting=True)
    t = 12.0
    while t <= until:
        b.at(t).log("finalize CNClaim", name="X")
        t += 2
    return b


def test_claim_still_present_after_deadline_fails_with_claim_and_its_pods():
    b = stuck_finalize(until=90)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert verdict.bugs == ("B1",)
    assert verdict.violation.t == 70
    first_after = next(e for e in b.entries if e.t > 70)
    assert verdict.violation.seq == first_after.seq
    assert verdict.violation.objects == ("CNClaim/X", "Pod/B")
    assert CLAIM_FINALIZER in verdict.violation.message


def test_claim_gone_in_time_passes():
    b = HistoryBuilder()
    bind(b, "X", "B")
    b.at(10).claim("X", deleting=True)
    b.at(11).pod("B", phase="Draining", claimed_by=None)
    b.at(12).claim("X", finalizers=[])
    b.delete("CNClaim", "X")
    b.at(200).marker("settled")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "pass"
    assert verdict.note.startswith("1 claim deletion")


def test_clock_starts_at_the_first_change_showing_deletion():
    b = stuck_finalize(until=40)
    b.at(50).claim("X", phase="Bound")
    b.at(71).marker("settled")
    assert INVARIANT.check(b.build(), OPTIONS).violation.t == 70


def test_deadline_not_yet_passed_is_not_reported():
    b = stuck_finalize(until=70)
    verdicts = evaluate(b.build(), OPTIONS, final=False)
    assert verdicts[0].invariant == "finalizer-completes"
    assert verdicts[0].status == "pass"
    assert "still open" in verdicts[0].note
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"
    b.at(70.5).log("finalize CNClaim", name="X")
    assert evaluate(b.build(), OPTIONS, final=False)[0].status == "fail"


def test_message_names_every_finalizer_and_labelled_pod_or_none():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.pod("B", phase="Bound", claimed_by="X")
    b.at(10).claim("X", deleting=True, finalizers=["f1", "f2"])
    b.at(71).marker("settled")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.objects == ("CNClaim/X", "Pod/A", "Pod/B")
    assert verdict.violation.message == (
        "CNClaim X still exists 60s after its deletion started "
        "(finalizers: f1, f2; pods claimed-by=X: A, B)"
    )
    b = HistoryBuilder()
    b.claim("X", pod="A", finalizers=[])
    b.at(10).claim("X", deleting=True)
    b.at(71).marker("settled")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.objects == ("CNClaim/X",)
    assert verdict.violation.message.endswith("(finalizers: none; pods claimed-by=X: none)")


def test_deadline_passed_by_now_is_reported_with_the_last_entry():
    b = stuck_finalize(until=40)
    checker = IncrementalChecker(OPTIONS, (INVARIANT,))
    checker.feed(b.entries)
    (running,) = checker.verdicts(now=70)
    assert running.status == "pass" and "1 still open" in running.note
    (late,) = checker.verdicts(now=70.1)
    assert (late.violation.t, late.violation.seq) == (70, b.entries[-1].seq)
