"""The operator frozen from outside the framework — SIGSTOP for ``FREEZE`` seconds at a
random moment, by a separate process — on a scenario it otherwise passes: every run passes
or is inconclusive, none fails, and each freeze is in its history with its window."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
from typing import Any

from mochaos.interpose.proxy import OPERATOR_KUBECONFIG as INTERPOSER_KUBECONFIG
from mochaos.observe.history import OPERATOR_FREEZE, History

from support.child_runs import CHILD, ROOT, child_env, needs_binaries, run_child

RUNS = 10
"""As many as ``child/seed_runs.py`` has."""
FREEZE = 15.0
"""Seconds frozen: longer than the finalize timeout at --time-scale 0.2 (12 s)."""
AFTER = (2.0, 15.0)
"""When the freeze lands, in seconds after the operator started (within the scenario's
span, which a freeze prolongs)."""
SCENARIO_MARKER = "scenario"
"""The marker a scenario starts with, just after its operator's watch is started."""
STARTUP_SLACK = 1.0
"""Seconds after that marker a freeze must last to be judged: the watch's first probe runs
when its thread is scheduled, a moment later on a loaded machine."""


@needs_binaries
def test_an_operator_frozen_from_outside_is_never_failed(isolated_cluster, tmp_path):
    env = child_env(**isolated_cluster)
    freezes = tmp_path / "freezes.jsonl"
    # The child's operators, each talking to the apiserver through its own interposer (the
    # interposer's command line names that kubeconfig too, never before --namespace); the
    # child's own temporary folder (its operators' interposers live there) tells them
    # from the operators of tests running beside it.
    basetemp = tmp_path / "child-tmp"
    operator = f"{INTERPOSER_KUBECONFIG} --namespace"
    freezer = subprocess.Popen(
        [sys.executable, str(CHILD / "freezer.py"), "--match", str(basetemp), "--match", operator,
         "--seconds", str(FREEZE), "--after", *map(str, AFTER), "--out", str(freezes)],
        cwd=ROOT,
    )  # fmt: skip
    try:
        run = run_child(tmp_path, str(CHILD / "seed_runs.py"), "-n", "5",
                        "--basetemp", str(basetemp), "--operator", "model:fixed", env=env,
                        timeout=1500)  # fmt: skip
    finally:
        freezer.send_signal(signal.SIGTERM)
        freezer.wait(timeout=30)
    summary = json.loads((run.run_dir() / "summary.json").read_text())
    outcomes = [t["outcome"] for t in summary["tests"]]
    assert len(outcomes) == RUNS, run.output[-3000:]
    odd = [(t["outcome"], t.get("message", "")[:600]) for t in summary["tests"]
           if t["outcome"] not in ("passed", "inconclusive")]  # fmt: skip
    assert not odd, (outcomes, odd)
    seen = [json.loads(line) for line in freezes.read_text().splitlines()]
    # Each run's operator is matched (it is named by its namespace, as its scenario is).
    assert len(seen) >= RUNS and all(f["namespace"] for f in seen), seen
    histories = {
        e.namespace: h
        for h in (History.from_jsonl(p) for p in run.run_dir().glob("*/history.jsonl"))
        for e in itertools.islice(h.changes(), 1)
    }  # fmt: skip
    frozen = [f for f in seen if "stopped" in f]
    judged = [f for f in frozen if _while_watched(f, histories[f["namespace"]])]
    # Most freezes land while their scenario runs (the rest before or after it, or not at
    # all when the operator exits first: nothing the framework does could cause that).
    assert len(judged) >= RUNS // 2, seen
    for f in judged:
        history = histories[f["namespace"]]
        edges = list(history.period_edges(OPERATOR_FREEZE))
        labels = [(e.edge, e.subject) for e in edges]
        marks = [e.t for e in edges if e.edge == "start" and e.subject == str(f["pid"])]
        assert len(marks) == 1, (f, labels)
        # Seen while the process really was stopped (the watch reads its state from /proc),
        # whatever the poll's latency on a loaded machine; the freezer stamps "stopped"
        # just after its SIGSTOP.
        assert f["stopped"] - 1 <= marks[0] <= f["resumed"], (f, marks)
        # Its end is in the history whenever the recording went on past the SIGCONT (a
        # scenario may end, and stop its operator, while the operator is still frozen).
        thaws = [e.t for e in edges if e.edge == "end"]
        if not f["gone"] and history.end > f["resumed"]:
            assert any(t >= marks[0] for t in thaws), (f, labels)
    print(
        f"outcomes: {outcomes}; {len(judged)} of {len(frozen)} freezes of {FREEZE:.0f}s "
        f"while a scenario was watched; {len(seen) - len(frozen)} operators exited first"
    )


def _while_watched(freeze: dict[str, Any], history: History) -> bool:
    """Whether the freeze overlaps the part of the scenario its operator is watched in:
    from just after the scenario's marker (the watch's first probe runs when its thread
    does) to the history's last entry (the watch probes once more when the recording
    stops, after every entry)."""
    (begun,) = [m.t for m in history.markers() if m.label == SCENARIO_MARKER]
    return freeze["resumed"] > begun + STARTUP_SLACK and freeze["stopped"] < history.end
