"""conflicts-resolve: the operator's refused writes to one object do not repeat without end."""

import pytest

from mochaos.config import CheckOptions
from mochaos.invariants import IncrementalChecker, evaluate, get
from mochaos.observe.history import OPERATOR_BLIND

from support.builders import HistoryBuilder

INVARIANT = get("conflicts-resolve")
OPTIONS = CheckOptions(conflict_budget=5, grace=20)


def test_a_write_refused_over_and_over_fails_once_over_budget_and_past_the_grace():
    b = HistoryBuilder()
    for i in range(12):
        b.at(i * 2).call("update", "cnsets", "pool", 409)
    twelfth = b.entries[11]
    b.at(30).call("update", "cnsets", "pool", 200)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    # the 12th refusal: over 5, and 22 s > the 20 s grace
    assert (verdict.violation.t, verdict.violation.seq) == (22, twelfth.seq)
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
    checker = IncrementalChecker(OPTIONS, (INVARIANT,))
    checker.feed(b.entries)
    assert checker.verdicts(now=20)[0].status == "pass"
    late = checker.verdicts(now=21)[0]  # past the grace by the clock, no entry since
    assert (late.violation.t, late.violation.seq) == (21, b.seq)
    last = b.at(30).pod("q", phase="Bound")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert (verdict.status, verdict.violation.t, verdict.violation.seq) == ("fail", 30, last.seq)


def test_a_run_within_budget_at_the_end_of_the_history_passes_and_the_note_says_so():
    b = HistoryBuilder()
    for i in range(5):
        b.at(i * 10).call("update", "cnsets", "pool", 409)  # 5: the budget itself, over 40 s
    b.at(45).call("update", "pods", "p", 200)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert (verdict.status, verdict.note) == (
        "pass",
        "6 write(s) of the operator's, 5 refused; 0 run(s) of refusals resolved, "
        "1 within budget at the end",
    )


def test_the_message_names_every_verb_and_answer_of_the_run_and_how_long_it_lasted():
    b = HistoryBuilder()
    for i in range(4):
        b.at(100 + i * 3).call("patch", "cnclaims", "a", 409, subresource="status")
        b.at(101 + i * 3).call("update", "cnclaims", "a", 500, subresource="status")
    b.at(122).call("update", "cnclaims", "a", 422, subresource="status")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert (verdict.violation.t, verdict.violation.objects) == (122, ("cnclaims/a/status",))
    assert verdict.violation.message == (
        "9 patch/update of cnclaims/a/status refused in a row over 22.0s, none landing "
        "between (budget 5 refusals unresolved after 20s; answers 409×4, 422×1, 500×4)"
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
        b.at(i * 6).call("update", "pods", "a", 409)
        b.call("update", "pods", "b", 500)
        b.call("update", "cnclaims", "a", 409, subresource="status")
        b.call("update", "cnclaims", "a", 200)  # the main resource landing is no progress
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"
    b.at(30).call("update", "cnclaims", "a", 409, subresource="status")
    assert INVARIANT.check(b.build(), OPTIONS).violation.objects == ("cnclaims/a/status",)


def test_routine_refusals_injected_failures_reads_and_no_refusal_do_not_count():
    b = HistoryBuilder()
    for i in range(10):  # over 27 s: longer than the grace
        b.at(i * 3).call("create", "configmaps", "cm", 409)  # AlreadyExists
        b.call("delete", "pods", "gone", 404)
        b.call("patch", "pods", "p", 409, action="failed")  # the interposer's fail rule
        b.call("get", "pods", "p", 500)  # a read: no write
        b.call("update", "pods", "q", 0)  # no answer recorded: not counted as a write
        b.call("update", "pods", "r", 300)  # answered, neither refused (4xx/5xx) nor landed
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert (verdict.status, verdict.note) == (
        "pass",
        "40 write(s) of the operator's, 0 refused; 0 run(s) of refusals resolved",
    )


@pytest.mark.parametrize(
    ("verb", "status"),
    [("update", 400), ("patch", 422), ("delete", 403), ("delete", 409), ("create", 500)],
)
def test_every_other_refusal_of_a_write_counts(verb, status):
    # only a create's 409 and a delete's 404 are the answer the write wanted
    b = HistoryBuilder()
    for i in range(6):
        b.at(i * 5).call(verb, "pods", "p", status)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert (verdict.status, verdict.violation.t) == ("fail", 25)
    assert verdict.violation.message.startswith(f"6 {verb} of pods/p refused in a row")


def test_only_a_write_that_lands_ends_a_run_not_a_read_nor_an_answer_below_400():
    for other in (("get", 200), ("update", 300)):
        b = HistoryBuilder()
        for i in range(6):
            b.at(i * 5).call("update", "pods", "p", 409)
            b.call(other[0], "pods", "p", other[1])
        verdict = INVARIANT.check(b.build(), OPTIONS)
        assert (verdict.status, verdict.violation.t) == ("fail", 25), other
        assert verdict.violation.message.endswith("answers 409×6)")


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


def test_open_while_a_run_is_over_budget_and_decided_once_it_failed():
    b = HistoryBuilder()
    for i in range(5):
        b.at(i).call("update", "pods", "p", 409)
    checker = IncrementalChecker(OPTIONS, (INVARIANT,))
    checker.feed(b.entries)
    assert checker.undecided(10) == []  # the budget itself: not open
    b.at(5).call("update", "pods", "p", 409)
    checker.feed(b.entries[-1:])
    # over the budget: it fails if still unresolved after the grace
    assert checker.undecided(10) == ["conflicts-resolve open"]
    assert checker.decided(10) == []
    b.at(12).call("update", "pods", "p", 200)
    checker.feed(b.entries[-1:])
    assert checker.undecided(13) == []
    for i in range(7):
        b.at(30 + i * 3.5).call("update", "pods", "p", 409)  # the 7th at 51: 21 s > 20 s
    checker.feed(b.entries[-7:])
    assert checker.verdicts()[0].violation.t == 51
    assert (checker.decided(52), checker.undecided(52)) == (["conflicts-resolve"], [])
