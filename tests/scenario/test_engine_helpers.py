"""The engine's pure helpers: the failure message and the state summary."""

from __future__ import annotations

from mochaos.invariants.verdict import Verdict, Violation
from mochaos.observe.history import Change, History, State
from mochaos.report.result import ScenarioResult
from mochaos.scenario._checker import failure_message
from mochaos.scenario._describe import describe_state


def _claim(name: str, *, t: float, rv: int, deleting: bool = False, source: str = "") -> Change:
    meta = {"name": name, **({"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleting else {})}
    spec = {"podName": "b", **({"sourcePod": {"podName": source}} if source else {})}
    return Change(rv, t, "CNClaim", "MODIFIED", "ns", name, rv, {"metadata": meta, "spec": spec})


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
