"""A stand-in for the pytest session of a batch: it writes the results a policy decides.

It reads the batch file and the reports folder from the arguments the runner passes,
writes one ``result.json`` per run (the learn run's with a hand-written history) and the
summary, as the plugin would. What it cannot stand in for — the cases run for real — is
tested on the model in ``test_explore_model.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from mochaos import exits
from mochaos.explore.plan import batch_runs, case_of_test, load
from mochaos.invariants.verdict import Verdict
from mochaos.report.result import ScenarioResult
from mochaos.report.rundir import create_run_dir, new_run_id, test_dir
from mochaos.report.summary import merge_summary, write_result

from .histories import migration_learn_run

Outcome = tuple[str, list[str], list[str]]
"""outcome, failed invariants, bug IDs."""
Policy = Callable[[str, int], Outcome]
"""(case id, how many runs of it this fake made before) -> the run's outcome."""

PASS: Outcome = ("passed", [], [])
SEED_RACE: Outcome = (
    "failed",
    ["finalizer-completes", "no-label-residue", "scalein-skips-migrating", "retry-budget"],
    ["B1", "B2", "B5", "B6"],
)


class FakePytest:
    """Callable as the runner's ``run_pytest``; remembers every batch it ran."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.batches: list[list[str]] = []
        self._made: dict[str, int] = {}

    def __call__(self, args: list[str]) -> int:
        batch = Path(next(a for a in args if a.startswith("--mochaos-explore=")).split("=", 1)[1])
        reports = Path(args[args.index("--mochaos-reports-dir") + 1])
        exploration = load(batch)
        run_dir = create_run_dir(reports, new_run_id())
        ran = []
        for test_id, case in batch_runs(exploration):
            nodeid = f"mochaos/explore/test_explore.py::test_explore[{test_id}]"
            folder = test_dir(run_dir, nodeid)
            outcome, invariants, bugs = self.policy(case.id, self._made.get(case.id, 0))
            self._made[case.id] = self._made.get(case.id, 0) + 1
            if case_of_test(test_id) == "learn":
                migration_learn_run().to_jsonl(folder / "history.jsonl")
            result = ScenarioResult(
                nodeid=nodeid, outcome=outcome, operator_target="model:fixed",
                operator_version="model-fixed", seed=7, duration=1.0,
                verdicts=[Verdict(i, "fail", tuple(bugs)) for i in invariants],
                bugs=bugs, artifacts={"timeline_html": str(folder / "timeline.html")},
            )  # fmt: skip
            write_result(folder, result)
            ran.append(test_id)
        summary = merge_summary(run_dir, meta={})
        self.batches.append(ran)
        return exits.of_counts(json.loads(summary.read_text())["counts"])
