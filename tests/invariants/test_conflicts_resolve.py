"""conflicts-resolve: the operator's refused writes to one object do not repeat without end."""

from mochaos.config import CheckOptions
from mochaos.invariants import evaluate, get
from mochaos.observe.history import OPERATOR_BLIND

from support.builders import HistoryBuilder

INVARIANT = get("conflicts-resolve")
OPTIONS = CheckOptions(conflict_budget=5, grace=20)


def test_a_write_refused_over_and_over_fails_once_over_budget_and_past_the_grace():
    b = HistoryBuilder()
    for i in range(12):
        b.at(i * 2).call("update", "cnsets", "pool", 409)
    b.at(30).call("update", "cnsets", "pool", 200)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert verdict.violation.t == 22  # the 12th refusal: over 5, and 22 s > the 20 s grace
    assert verdict.violation.objects == ("cnsets/pool",)
    assert verdict.violation.message == (
        "12 update of cnsets/pool refused in a row over 22.0s, none landing between "
        "(budget 5 refusals unresolved after 20s; answers 409×12)"
    )


def test_a_burst_of_conflicts_that_resolves_passes():
    # the real pool's CNSet update: six 409s in 0.4 s while the CNSet controller rewrote the
    # status, then it landed (race on the real manager, 2026-12-03)
    b = HistoryBuilder()
    for i in range(6):
        b.at(168 + i * 0.08).call("update", "cnsets", "pool", 409)
    b.at(168.6).call("update", "cnsets", "pool", 200)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_a_streak_still_unresolved_when_the_history_ends_fails_past_the_grace():
    b = HistoryBuilder()
    for i in range(7):
        b.at(i).call("patch", "pods", "p", 422)
    b.at(10).pod("q", phase="Idle")
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"  # 10 s: within the grace
    b.at(30).pod("q", phase="Bound")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert (verdict.status, verdict.violation.t) == ("fail", 30)


def test_conflicts_that_resolve_pass_however_many():
    b = HistoryBuilder()
    for i in range(30):
        b.at(i).call("update", "pods", "p", 409)
        b.call("update", "pods", "p", 409)
        b.call("update", "pods", "p", 200)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "pass", verdict
    assert verdict.note == (
        "90 write(s) of the operator's, 60 refused; 30 run(s) of refusals resolved"
    )


def test_streaks_are_per_object_and_subresource():
    b = HistoryBuilder()
    for i in range(5):
        b.at(i * 6).call("update", "pods", "a", 409)
        b.call("update", "pods", "b", 500)
        b.call("update", "cnclaims", "a", 409, subresource="status")
        b.call("update", "cnclaims", "a", 200)  # the main resource landing is no progress
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"
    b.at(30).call("update", "cnclaims", "a", 409, subresource="status")
    assert INVARIANT.check(b.build(), OPTIONS).violation.objects == ("cnclaims/a/status",)


def test_routine_refusals_and_injected_failures_do_not_count():
    b = HistoryBuilder()
    for i in range(10):
        b.at(i).call("create", "configmaps", "cm", 409)  # AlreadyExists
        b.call("delete", "pods", "gone", 404)
        b.call("patch", "pods", "p", 409, action="failed")  # the interposer's fail rule
        b.call("get", "pods", "p", 500)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "pass", verdict


def test_refusals_while_the_operator_was_blind_are_not_its_loop():
    b = HistoryBuilder()
    b.period(OPERATOR_BLIND, "start", "stale-view-1", "pods", component="operator")
    for i in range(8):
        b.at(i * 4).call("patch", "pods", "p", 409)
    b.at(33).period(OPERATOR_BLIND, "end", "stale-view-1", component="operator")
    b.at(34).call("patch", "pods", "p", 200)
    judged = {v.invariant: v for v in evaluate(b.build(), OPTIONS, final=True)}
    assert judged["conflicts-resolve"].status == "pass"
    assert INVARIANT.check(b.build(), OPTIONS).status == "fail"  # the raw history would


def test_without_the_interposer_it_says_it_saw_no_write():
    b = HistoryBuilder()
    b.pod("p", phase="Idle")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert (verdict.status, verdict.note) == (
        "pass",
        "no write of the operator's recorded (no interposer)",
    )
