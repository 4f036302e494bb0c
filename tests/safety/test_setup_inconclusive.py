"""A scenario found inconclusive while it is set up (a suite's topology fixture whose wait
timed out) is inconclusive in its result and the run's summary, with its reason, as in
JUnit — not an error without a message, which ``qualify`` counted as a broken run."""

from __future__ import annotations

import json

from .child.setup_inconclusive import REASON
from support.child_runs import CHILD, needs_binaries


@needs_binaries
def test_an_inconclusive_set_up_is_inconclusive_in_the_summary(child):
    run = child(str(CHILD / "setup_inconclusive.py"), "--operator", "model:fixed")
    case = run.case("test_topology_never_ready")
    assert case.outcome == "skipped" and case.message.startswith("INCONCLUSIVE"), run.output[-3000:]

    summary = json.loads((run.run_dir() / "summary.json").read_text())
    (test,) = summary["tests"]
    assert (test["outcome"], test["message"]) == ("inconclusive", f"INCONCLUSIVE: {REASON}")
    assert summary["counts"]["inconclusive"] == 1 and summary["counts"]["error"] == 0
