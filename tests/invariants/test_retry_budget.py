"""retry-budget: finalize passes per claim and error records per object stay within budget."""

from dataclasses import replace

from mochaos.config import CheckOptions
from mochaos.invariants import IncrementalChecker, get
from mochaos.observe.history import MATRIXONE_FAULT

from support.builders import HistoryBuilder

INVARIANT = get("retry-budget")
OPTIONS = CheckOptions(retry_budget=10, retry_window=60)


def finalize_every(b: HistoryBuilder, claim: str, *, start: float, every: float, count: int):
    for i in range(count):
        b.at(start + i * every).log("finalize CNClaim", name=claim)
        b.log("skip reclaim, pod still claimed by other CNClaim", name=claim, pod="B", holder="Z")
        b.log("does not complete finalizing, retry", name=claim)


def test_finalize_hot_loop_fails_at_the_record_over_budget():
    b = HistoryBuilder()
    finalize_every(b, "X", start=30, every=2, count=45)
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    eleventh = [e for e in b.entries if e.msg == "finalize CNClaim"][10]
    assert (verdict.violation.t, verdict.violation.seq) == (50, eleventh.seq)
    assert verdict.violation.objects == ("CNClaim/X",)
    assert verdict.violation.message.startswith("11 'finalize CNClaim' records for CNClaim X")


def test_budget_itself_is_allowed():
    b = HistoryBuilder()
    finalize_every(b, "X", start=30, every=2, count=10)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_window_slides():
    b = HistoryBuilder()
    finalize_every(b, "X", start=0, every=7, count=30)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"
    b = HistoryBuilder()
    finalize_every(b, "X", start=0, every=6, count=30)
    assert INVARIANT.check(b.build(), OPTIONS).violation.t == 60


def test_counts_are_per_claim_and_exact_message():
    b = HistoryBuilder()
    finalize_every(b, "X", start=0, every=1, count=6)
    finalize_every(b, "Y", start=10, every=1, count=6)
    for t in range(20, 40):
        b.at(t).log("finalize CNClaim, reclaim bound CN", name="X", cn="B")
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_error_records_per_object_fail_over_budget():
    b = HistoryBuilder()
    for t in range(11):
        b.at(t).log("goroutine 1 [running]:\nstack", name="S1", level="error", error="boom")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.violation.objects == ("S1",)
    assert "11 error-level records for chaos-test/S1" in verdict.violation.message
    assert verdict.violation.message.endswith("last: boom")
    b = HistoryBuilder()
    for t in range(11):
        b.at(t).log("cache not synced, wait", name="S1", level="info")
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_errors_of_an_unreachable_apiserver_are_not_a_hot_loop():
    unreachable = 'Get "https://127.0.0.1:32764/api": dial tcp 127.0.0.1:32764: connection refused'
    b = HistoryBuilder()
    for t in range(11):
        b.at(t * 0.05).log("Reconciler error", name="S1", level="error", error=unreachable)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_errors_of_a_library_logger_with_no_namespace_name_no_object_of_the_test():
    # The in-cluster operator's MatrixOne clients log `name: hakeeper-client-backend` and no
    # namespace, e.g. while another test's log service goes away: not this test's objects.
    b = HistoryBuilder()
    for t in range(11):
        record = b.at(t).log("read loop stopped", name="hakeeper-client-backend", level="error")
        b.entries[-1] = replace(record, namespace="")
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_the_last_error_is_cut_to_120_characters():
    b = HistoryBuilder()
    long = "x" * 119 + "yz"
    for t in range(11):
        b.at(t).log("stack", name="S1", level="error", error=long + "\nmore")
    message = INVARIANT.check(b.build(), OPTIONS).violation.message
    assert message == (
        f"11 error-level records for chaos-test/S1 within 60s (budget 10); last: {long[:120]}"
    )


def test_open_while_the_last_retry_is_within_its_window_and_decided_once_over_budget():
    b = HistoryBuilder()
    finalize_every(b, "X", start=0, every=5, count=3)  # passes at 0, 5 and 10
    checker = IncrementalChecker(OPTIONS, (INVARIANT,))
    checker.feed(b.entries)
    # More retries may still come within 60 s of the last one and exceed the budget.
    assert checker.undecided(70) == ["retry-budget open"]
    assert checker.undecided(70.5) == []
    assert checker.decided(70.5) == []
    finalize_every(b, "X", start=15, every=5, count=8)  # the 11th pass, at 50, within 60 s
    checker.feed(b.entries[9:])
    assert checker.verdicts()[0].violation.t == 50
    assert checker.decided(51) == ["retry-budget"]  # over budget once: that stays
    assert checker.undecided(51) == []


def test_optimistic_concurrency_conflicts_are_not_error_records_of_a_loop():
    # The pool's "error set pod terminating" on a pod another controller just wrote: 11 in a
    # minute on a correct build; conflicts-resolve judges them per object written.
    conflict = (
        'Operation cannot be fulfilled on pods "pool-cn-x": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    b = HistoryBuilder()
    for t in range(11):
        b.at(t).log("error set pod terminating", name="pool", level="error", error=conflict)
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"
    b.at(12).log("error set pod terminating", name="pool", level="error", error="webhook denied")
    b = HistoryBuilder()
    for t in range(11):
        b.at(t).log("error set pod terminating", name="pool", level="error", error="denied")
    assert INVARIANT.check(b.build(), OPTIONS).status == "fail"


def bind_retries(*, faulted: bool) -> HistoryBuilder:
    """Claim X's bind fails 13 times in 16 s on client-go's backoff, each attempt waiting
    ~1 s on HAKeeper's discovery (the real manager at 2301e3b against a hanging HAKeeper);
    with ``faulted``, while the scenario held HAKeeper unreachable."""
    b = HistoryBuilder()
    if faulted:
        b.at(5).period(MATRIXONE_FAULT, "start", "hakeeper", "hang")
    for i in range(13):
        b.at(6 + i * 1.3).log("stack", name="X", level="error",
                              error="error claim idle CN: context deadline exceeded")  # fmt: skip
    if faulted:
        b.at(25).period(MATRIXONE_FAULT, "end", "hakeeper")
    return b


def test_retries_against_a_matrixone_the_scenario_made_unreachable_are_no_hot_loop():
    # red: the same errors with MatrixOne up are a hot loop
    assert INVARIANT.check(bind_retries(faulted=False).build(), OPTIONS).status == "fail"
    # green: logged while HAKeeper was held unreachable, they are the operator's backoff
    verdict = INVARIANT.check(bind_retries(faulted=True).build(), OPTIONS)
    assert verdict.status == "pass", verdict.violation
    assert "13 left out, logged while MatrixOne was made unreachable" in verdict.note
    # a call made before HAKeeper came back may fail up to one RPC timeout (10 s) after it;
    # later ones count
    b = bind_retries(faulted=True)
    for i in range(11):
        b.at(25 + 10 + 1 + i).log("stack", name="X", level="error", error="boom")
    late = INVARIANT.check(b.build(), OPTIONS)
    assert late.status == "fail" and late.violation.t == 46


def test_a_call_failing_up_to_one_rpc_timeout_after_matrixone_is_back_is_left_out():
    # HAKeeper back at 25: calls made before may fail until 35 (one 10 s RPC timeout), that
    # instant included, and each is counted as left out
    b = bind_retries(faulted=True)
    for t in (25.5, 30, 35):
        b.at(t).log("stack", name="X", level="error", error="context deadline exceeded")
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "pass", verdict.violation
    assert "record(s), within budget; 16 left out, logged while" in verdict.note
