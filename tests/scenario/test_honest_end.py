"""The scenario cannot report a test that tested nothing as passed: each mistake of
child/mistakes.py, run on ``model:fixed`` (where every invariant holds), ends inconclusive
or an error — in the terminal, summary.json, JUnit and the exit status — never passed.
(Written against the scenario API before this one, the same five mistakes all passed.)"""

from __future__ import annotations

import json
from pathlib import Path

from mochaos import exits

from support.child_runs import needs_binaries, run_child

CHILD = Path(__file__).with_name("child") / "mistakes.py"
EXPECTED = {
    "test_never_asks_for_the_verdict": (
        "inconclusive", "after its trigger 'pod pool-",
    ),
    "test_a_refused_fault": (
        "inconclusive", 'delete_pod Pod/no-such-pod did not land: the apiserver answered '
        '404 NotFound: pods "no-such-pod" not found',
    ),
    "test_a_refused_fault_while_a_session_holds_the_drain": (
        "inconclusive", "delete_pod Pod/no-such-pod did not land",
    ),
    "test_a_refused_fault_caught": (
        "inconclusive", "delete_pod Pod/no-such-pod did not land",
    ),
    "test_a_trigger_that_is_not_what_when_returned": (
        "error", "trigger= takes what sc.when(...) returned, not function",
    ),
    "test_the_agents_gated_request_misses_its_window": (
        "inconclusive", "request_migration CNClaim/x landed at rv",
    ),
    "test_an_empty_body": ("inconclusive", "the scenario gave the invariants nothing to judge"),
}  # fmt: skip
TERMINAL = {"inconclusive": "INCONCLUSIVE", "error": "ERROR"}
JUNIT = {"inconclusive": "skipped", "error": "failure"}


@needs_binaries
def test_no_mistake_is_reported_as_passed(tmp_path: Path) -> None:
    run = run_child(tmp_path, str(CHILD), "--operator", "model:fixed", "-n", "2", timeout=900)
    summary = json.loads((run.run_dir() / "summary.json").read_text())
    outcomes = {t["nodeid"].rsplit("::", 1)[-1]: t for t in summary["tests"]}
    assert sorted(outcomes) == sorted(EXPECTED), run.output[-3000:]
    for name, (outcome, says) in EXPECTED.items():
        result = outcomes[name]
        assert result["outcome"] == outcome, (name, result["message"])
        assert says in result["message"], (name, result["message"])
        assert f"{TERMINAL[outcome]} {name}" in run.output, run.output[-3000:]
        case = run.case(name)
        assert case.properties["verdict"] == outcome, (name, case.properties)
        assert case.outcome == JUNIT[outcome], (name, case.outcome)
    assert summary["counts"]["passed"] == 0
    # The misused trigger is the test's usage error: pytest's usage status, by the one table.
    assert summary["usage_errors"] == 1
    assert run.exit_code == exits.of_summary(summary, usage=exits.PYTEST_USAGE) == 4
