"""The doubles the operator depends on, stopped mid-scenario through the local cluster's
own stop/start API: each outage is in the history, and the violations the operator makes
meanwhile (the seed's, on ``model:upstream``) are an infrastructure error naming them —
never "invariant violated"."""

from __future__ import annotations

import json
from typing import Any

from mochaos.observe.history import History, Marker, PeriodEdge

from support.child_runs import CHILD, child_env, needs_binaries

SCENARIO = "test_dependencies_down_mid_scenario"


def _outage_run(child: Any, cluster: str, scenario: str) -> tuple[Any, str, list[str]]:
    """Run one of ``child/dependency_outage.py``'s scenarios on ``model:upstream``; its run,
    the message of its case (checked to be a verdict-phase infrastructure error saying a
    dependency was unavailable) and its history's marker labels."""
    env = child_env(MOCHAOS_CLUSTER_NAME=cluster)
    run = child(str(CHILD / "dependency_outage.py"), "--operator", "model:upstream",
                "-k", scenario, env=env)  # fmt: skip
    message = run.case(scenario).message
    # An error raised in the test's call is a JUnit <failure> (pytest's rule); its message
    # says what it is, and the run's summary counts it as an error.
    assert message.startswith("mo-chaos infrastructure error in phase 'verdict': "), (
        message, run.output[-3000:])  # fmt: skip
    assert "a dependency of the operator was unavailable" in message
    (folder,) = (p for p in run.run_dir().iterdir() if p.name.endswith(f".{scenario}"))
    history = History.from_jsonl(folder / "history.jsonl")
    return (
        run,
        message,
        [
            e.label
            if isinstance(e, Marker)
            else f"{e.period} {e.edge}: {e.subject} {e.reason}".strip()
            for e in history
            if isinstance(e, Marker | PeriodEdge)
        ],
    )


@needs_binaries
def test_doubles_down_mid_scenario_are_an_infrastructure_error_naming_them(child, private_cluster):
    run, message, labels = _outage_run(child, private_cluster, SCENARIO)
    assert "matrixone for" in message and "kruise for" in message, message
    (test,) = json.loads((run.run_dir() / "summary.json").read_text())["tests"]
    assert test["outcome"] == "error"
    assert any(v["status"] == "fail" for v in test["verdicts"]), "the seed's violations stay"
    for name in ("matrixone", "kruise"):
        # Why it is unavailable depends on how far its stop got when the probe looked: its
        # process gone ("not running") or, for kruise-manager, its health endpoint closed.
        down = [i for i, lb in enumerate(labels)
                if lb.startswith(f"dependency-outage start: {name} ")]  # fmt: skip
        assert down, labels
        assert f"dependency-outage end: {name}" in labels, labels
        assert down[0] > labels.index(f"{name} stopping"), labels


KILLED = "test_kruise_manager_killed_mid_scenario"


@needs_binaries
def test_kruise_manager_killed_mid_scenario_is_an_infrastructure_error(child, private_cluster):
    _, message, labels = _outage_run(child, private_cluster, KILLED)
    assert "kruise for" in message and "matrixone" not in message, message
    down = [i for i, lb in enumerate(labels) if lb.startswith("dependency-outage start: kruise ")]
    assert down and down[0] > labels.index("kruise killed"), labels
    assert "dependency-outage end: kruise" in labels, labels
