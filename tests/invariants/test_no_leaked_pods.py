"""no-leaked-pods: after the epilogue, pool pods are released and no CNClaim is left."""

from mochaos.config import CheckOptions
from mochaos.ctrl.objects import CLAIM_FINALIZER
from mochaos.invariants import evaluate, get

from support.builders import HistoryBuilder, bind, ticks

INVARIANT = get("no-leaked-pods")
OPTIONS = CheckOptions(finalize_timeout=60)


def epilogue(*, release_b: bool = True, delete_x: bool = True) -> HistoryBuilder:
    """X on A and Y on B; all scaled to 0 at 100; pods released and claims deleted by 104."""
    b = HistoryBuilder()
    bind(b, "X", "A")
    bind(b, "Y", "B")
    b.pod("C", phase="Idle")
    b.pod("M", phase=None, pool=None)
    b.at(100).marker("epilogue")
    b.claimset("S1", replicas=0, by="scale_claimset", params={"replicas": 0})
    b.at(101).claim("X", deleting=True)
    b.claim("Y", deleting=True)
    b.at(102).pod("A", phase="Draining", claimed_by=None)
    if release_b:
        b.pod("B", phase="Draining", claimed_by=None)
    b.at(103).pod("A", phase="Idle")
    if delete_x:
        b.at(104).delete("CNClaim", "X")
    b.delete("CNClaim", "Y")
    if release_b:
        b.at(110).pod("B", phase="Terminating")
    return b


def test_clean_epilogue_passes():
    b = epilogue()
    ticks(b, 112, 200, every=10)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_skipped_without_epilogue_or_while_running():
    b = HistoryBuilder()
    bind(b, "X", "A")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert (verdict.status, verdict.note) == ("skipped", "no epilogue marker in the history")
    running = evaluate(epilogue(release_b=False).build(), OPTIONS, final=False)[9]
    assert (running.status, running.note) == ("skipped", "evaluated at settle")


def test_pod_still_bound_after_the_epilogue_leaks():
    b = epilogue(release_b=False)
    ticks(b, 112, 200, every=10)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert verdict.violation.t == 160
    assert verdict.violation.objects == ("Pod/B",)
    assert "60s after the epilogue: leaked pods B (Bound)" in verdict.violation.message


def test_leftover_claim_is_named_with_its_finalizers():
    b = epilogue(delete_x=False)
    ticks(b, 112, 200, every=10)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.objects == ("CNClaim/X",)
    assert f"leftover CNClaims X ({CLAIM_FINALIZER})" in verdict.violation.message


def test_state_is_judged_one_finalize_timeout_after_the_epilogue():
    late = epilogue(delete_x=False)
    ticks(late, 112, 165, every=10)
    late.at(170).delete("CNClaim", "X")
    ticks(late, 175, 200, every=10)
    verdict = INVARIANT.check(late.build(), OPTIONS)
    assert verdict.violation.t == 160
    last_judged = [e for e in late.entries if e.t <= 160][-1]
    assert verdict.violation.seq == last_judged.seq
    short = epilogue(delete_x=False)
    short.at(130).marker("settled")
    assert INVARIANT.check(short.build(), OPTIONS).violation.t == 130


def test_a_pod_still_warming_up_is_not_a_leak():
    b = epilogue()
    b.at(105).pod("N", phase="Unknown")
    ticks(b, 112, 200, every=10)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_every_leak_and_leftover_is_listed():
    b = epilogue(release_b=False, delete_x=False)
    b.at(105).pod("D", phase="Bound")
    b.claim("Y2", finalizers=[])
    b.claim("X", finalizers=[CLAIM_FINALIZER, "f2"])
    ticks(b, 112, 200, every=10)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.objects == ("Pod/B", "Pod/D", "CNClaim/X", "CNClaim/Y2")
    assert verdict.violation.message == (
        "60s after the epilogue: leaked pods B (Bound), D (Bound); "
        f"leftover CNClaims X ({CLAIM_FINALIZER}, f2), Y2 (no finalizers)"
    )
    b = epilogue()
    b.at(105).pod("E", phase=None)
    ticks(b, 112, 200, every=10)
    assert INVARIANT.check(b.build(), OPTIONS).violation.message == (
        "60s after the epilogue: leaked pods E (-)"
    )


def test_a_change_at_the_judging_time_itself_counts():
    b = epilogue(release_b=False)
    b.at(160).pod("B", phase="Idle", claimed_by=None)
    ticks(b, 170, 200, every=10)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert (verdict.status, verdict.note) == (
        "pass", "pool pods released and no CNClaim left at t=160",
    )  # fmt: skip
