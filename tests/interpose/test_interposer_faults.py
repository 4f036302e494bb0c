"""The interposer's faults on the reference model's correct profile, end to end: a crash
right after a write (the operator killed, started again, the write kept), failed writes
retried, a hold the test forgot let go at its end, and a rule that matched nothing reported
as a fault that did not happen (inconclusive), never as a pass."""

from __future__ import annotations

import json
from pathlib import Path

from mochaos.observe.history import History

from support.child_runs import needs_binaries, run_child

CHILD = Path(__file__).with_name("child") / "faults.py"


def _history(run, name: str) -> History:
    (folder,) = (p for p in run.run_dir().iterdir() if p.name.endswith(f".{name}"))
    return History.from_jsonl(folder / "history.jsonl")


@needs_binaries
def test_the_interposers_faults_on_a_correct_operator(tmp_path: Path) -> None:
    run = run_child(tmp_path, str(CHILD), "--operator", "model:fixed", "-n", "2", timeout=900)
    summary = json.loads((run.run_dir() / "summary.json").read_text())
    outcomes = {t["nodeid"].rsplit("::", 1)[-1]: t for t in summary["tests"]}
    assert {n: t["outcome"] for n, t in outcomes.items()} == {
        "test_crash_right_after_the_bind": "passed",
        "test_two_conflicts_then_the_write_lands": "passed",
        "test_a_hold_the_test_never_releases_is_let_go_at_its_end": "passed",
        "test_a_rule_nothing_matches_did_not_happen": "inconclusive",
    }, run.output[-3000:]
    crashed = _history(run, "test_crash_right_after_the_bind")
    (call,) = [c for c in crashed.api_calls() if c.action == "crashed"]
    assert (call.resource, call.name, call.subresource, call.status) == ("cnclaims", "x", "status",
                                                                         0)  # fmt: skip
    (restart,) = [a for a in crashed.actions("restart_operator")]
    assert restart.params == {"after": "crash-after-write-1"} and restart.t > call.t
    failed = _history(run, "test_two_conflicts_then_the_write_lands")
    assert [c.status for c in failed.api_calls() if c.action == "failed"] == [409, 409]
    held = _history(run, "test_a_hold_the_test_never_releases_is_let_go_at_its_end")
    assert "interposer rules released" in [m.label for m in held.markers()]
    assert [e.edge for e in held.period_edges()] == ["start", "end"]
    message = outcomes["test_a_rule_nothing_matches_did_not_happen"]["message"]
    assert "hold_write Pod/nobody never took effect" in message, message
