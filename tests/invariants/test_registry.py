"""mochaos.invariants: ALL, get and evaluate."""

import dataclasses

import pytest

from mochaos.errors import UsageError
from mochaos.invariants import ALL, evaluate, get
from mochaos.types import CheckOptions, History, Invariant

from .builders import HistoryBuilder, bind

IDS = [
    "finalizer-completes",
    "no-label-residue",
    "single-binding",
    "bound-has-pod",
    "scalein-skips-migrating",
    "migration-completes",
    "replicas-converge",
    "retry-budget",
    "pod-claim-agreement",
    "no-leaked-pods",
]
KNOWN_BUGS = {"B1", "B2", "B3", "B4", "B5", "B6", "#581"}


def test_all_ten_in_design_order_with_identity():
    assert [invariant.id for invariant in ALL] == IDS
    for invariant in ALL:
        assert isinstance(invariant, Invariant)
        assert invariant.severity == "error"
        assert set(invariant.bugs) <= KNOWN_BUGS
    covered = {bug for invariant in ALL for bug in invariant.bugs}
    assert covered == KNOWN_BUGS
    settle_only = [invariant.id for invariant in ALL if invariant.at_settle_only]
    assert settle_only == ["pod-claim-agreement", "no-leaked-pods"]


def test_get_by_id_and_unknown_id():
    assert get("retry-budget") is ALL[7]
    with pytest.raises(KeyError) as err:
        get("nope")
    assert err.value.args[0] == "unknown invariant 'nope'; known: " + ", ".join(IDS)


def test_evaluate_gives_one_verdict_per_invariant_in_order():
    b = HistoryBuilder()
    bind(b, "X", "A")
    running = evaluate(b.build(), CheckOptions(), final=False)
    assert [v.invariant for v in running] == IDS
    skipped = {v.invariant: v.note for v in running if v.status == "skipped"}
    assert skipped == {
        "migration-completes": "no migration happened",
        "pod-claim-agreement": "evaluated at settle",
        "no-leaked-pods": "evaluated at settle",
    }
    settled = evaluate(b.build(), CheckOptions(), final=True)
    assert [v.status for v in settled].count("pass") == 8
    assert settled[8].status == "pass"


def test_every_verdict_carries_its_invariant_s_identity():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.delete("Pod", "A")
    for final in (False, True):
        verdicts = evaluate(b.build(), CheckOptions(), final=final)
        for invariant, verdict in zip(ALL, verdicts, strict=True):
            assert (verdict.invariant, verdict.bugs, verdict.severity) == (
                invariant.id, invariant.bugs, invariant.severity,
            )  # fmt: skip
    statuses = {v.status for v in evaluate(b.build(), CheckOptions(), final=True)}
    assert statuses == {"pass", "fail", "skipped"}


def test_empty_history():
    verdicts = {v.invariant: v.status for v in evaluate(History(), CheckOptions(), final=True)}
    assert verdicts.pop("migration-completes") == "skipped"
    assert verdicts.pop("no-leaked-pods") == "skipped"
    assert set(verdicts.values()) == {"pass"}


@pytest.mark.parametrize(
    ("field", "value"),
    [("grace", -1), ("finalize_timeout", -0.5), ("retry_budget", -1), ("time_scale", 0)],
)
def test_bad_options_are_usage_errors(field, value):
    options = dataclasses.replace(CheckOptions(), **{field: value})
    with pytest.raises(UsageError, match=f"invariant option {field}="):
        evaluate(History(), options, final=True)
