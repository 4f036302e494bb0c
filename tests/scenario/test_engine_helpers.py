"""The engine's pure helpers: what is in flight, the failure message, the state summary."""

from __future__ import annotations

from mochaos.scenario.engine import describe_state, failure_message, in_flight
from mochaos.types import (
    Change,
    CheckOptions,
    History,
    ScenarioResult,
    State,
    Verdict,
    Violation,
)

OPTIONS = CheckOptions(finalize_timeout=60, migration_timeout=120)


def _claim(name: str, *, t: float, rv: int, deleting: bool = False, source: str = "") -> Change:
    meta = {"name": name, **({"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleting else {})}
    spec = {"podName": "b", **({"sourcePod": {"podName": source}} if source else {})}
    return Change(rv, t, "CNClaim", "MODIFIED", "ns", name, rv, {"metadata": meta, "spec": spec})


def test_in_flight_until_each_deadline_passes():
    h = History([_claim("x", t=0, rv=1, deleting=True), _claim("y", t=5, rv=2, source="a")])
    assert in_flight(h, 10, OPTIONS) == ["deleting x", "migrating y"]
    assert in_flight(h, 70, OPTIONS) == ["migrating y"]
    assert in_flight(h, 130, OPTIONS) == []


def test_a_deleted_claim_is_not_in_flight():
    gone = Change(3, 2, "CNClaim", "DELETED", "ns", "x", 3, {"metadata": {"name": "x"}})
    assert in_flight(History([_claim("x", t=0, rv=1, deleting=True), gone]), 10, OPTIONS) == []


def test_failure_message_puts_the_summary_on_its_first_line():
    result = ScenarioResult(
        nodeid="t", outcome="failed", operator_target="model:upstream", seed=7,
        finalize_retries={"x": 31, "y": 2}, agent_migration_retries=4, bugs=["B1"],
        verdicts=[Verdict("finalizer-completes", "fail", ("B1",),
                          violation=Violation(100.0, 9, ("CNClaim/x",), "still there"))],
    )  # fmt: skip
    first, *rest = failure_message(result, History(), []).splitlines()
    assert "finalizer-completes" in first and "B1" in first
    assert "finalize retries max 31 (x)" in first and "seed 7" in first
    assert any("CNClaim/x" in line for line in rest)
    assert "--chaos-seed=7" in rest[-1]


def test_failure_message_of_a_missed_window_is_inconclusive():
    result = ScenarioResult(nodeid="t", outcome="inconclusive", operator_target="model:fixed")
    text = failure_message(result, History(), ["scale_claimset CNClaimSet/s1 landed late"])
    assert text.startswith("INCONCLUSIVE") and "landed late" in text


def test_describe_state_names_phases_pods_and_holders():
    s = State()
    s.apply(_claim("x", t=0, rv=1, deleting=True))
    labels = {"pool.matrixorigin.io/phase": "Bound", "pool.matrixorigin.io/claimed-by": "x"}
    s.apply(
        Change(2, 0, "Pod", "ADDED", "ns", "b", 2, {"metadata": {"name": "b", "labels": labels}})
    )
    assert describe_state(s) == "claims: x=-(b, deleting); pods: b=Bound/x"
    assert describe_state(State()) == "claims: none; pods: none"
