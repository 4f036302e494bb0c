"""conflicts-resolve: the operator's refused writes to one object do not repeat without end."""

from mochaos.config import CheckOptions
from mochaos.invariants import evaluate, get
from mochaos.observe.history import OPERATOR_BLIND

from support.builders import HistoryBuilder

INVARIANT = get("conflicts-resolve")
OPTIONS = CheckOptions(conflict_budget=5)


def test_a_write_refused_over_and_over_fails_at_the_one_over_budget():
    b = HistoryBuilder()
    for i in range(6):
        b.at(i * 2).call("update", "cnsets", "pool", 409)
    b.at(20).call("update", "cnsets", "pool", 200)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert verdict.violation.t == 10
    assert verdict.violation.objects == ("cnsets/pool",)
    assert verdict.violation.message == (
        "6 update of cnsets/pool refused in a row over 10.0s, none landing between "
        "(budget 5; answers 409×6)"
    )


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
        b.at(i).call("update", "pods", "a", 409)
        b.call("update", "pods", "b", 500)
        b.call("update", "cnclaims", "a", 409, subresource="status")
        b.call("update", "cnclaims", "a", 200)  # the main resource landing is no progress
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"
    b.at(9).call("update", "cnclaims", "a", 409, subresource="status")
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
        b.at(i).call("patch", "pods", "p", 409)
    b.at(9).period(OPERATOR_BLIND, "end", "stale-view-1", component="operator")
    b.at(10).call("patch", "pods", "p", 200)
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
