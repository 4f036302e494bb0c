"""The operator frozen from outside the framework — SIGSTOP for ``FREEZE`` seconds at a
random moment, by a separate process — on a scenario it otherwise passes: every run passes
or is inconclusive, none fails, and each freeze is in its history with its window."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from mochaos.cluster.supervisor import KUBECONFIG_FILE
from mochaos.types import OPERATOR_FROZEN, OPERATOR_THAWED, History

from .helpers import CHILD, ROOT, child_env, needs_binaries, run_child

RUNS = 10
"""As many as ``child/seed_runs.py`` has."""
FREEZE = 15.0
"""Seconds frozen: longer than the finalize timeout at --time-scale 0.2 (12 s)."""
AFTER = (3.0, 30.0)
"""When the freeze lands, in seconds after the operator started (the scenario's span)."""


@needs_binaries
def test_an_operator_frozen_from_outside_is_never_failed(isolated_cluster, tmp_path):
    env = child_env(**isolated_cluster)
    name, state = isolated_cluster["MOCHAOS_CLUSTER_NAME"], isolated_cluster["MOCHAOS_STATE"]
    kubeconfig = Path(state) / "kwok" / "clusters" / name / KUBECONFIG_FILE
    freezes = tmp_path / "freezes.jsonl"
    freezer = subprocess.Popen(
        [sys.executable, str(CHILD / "freezer.py"), "--match", f"{kubeconfig} --namespace",
         "--seconds", str(FREEZE), "--after", *map(str, AFTER), "--out", str(freezes)],
        cwd=ROOT,
    )  # fmt: skip
    try:
        run = run_child(tmp_path, str(CHILD / "seed_runs.py"), "-n", "5",
                        "--operator", "model:fixed", env=env, timeout=1500)  # fmt: skip
    finally:
        freezer.send_signal(signal.SIGTERM)
        freezer.wait(timeout=30)
    summary = json.loads((run.run_dir() / "summary.json").read_text())
    outcomes = [t["outcome"] for t in summary["tests"]]
    assert len(outcomes) == RUNS, run.output[-3000:]
    odd = [(t["outcome"], t.get("message", "")[:600]) for t in summary["tests"]
           if t["outcome"] not in ("passed", "inconclusive")]  # fmt: skip
    assert not odd, (outcomes, odd)
    frozen = [json.loads(line) for line in freezes.read_text().splitlines()]
    assert len(frozen) >= RUNS // 2, frozen  # most scenarios outlast their freeze's moment
    histories = [History.from_jsonl(p) for p in run.run_dir().glob("*/history.jsonl")]
    marks = [(m.label, m.t) for h in histories for m in h.markers()]
    for f in frozen:
        (start,) = [t for label, t in marks if label == f"{OPERATOR_FROZEN}: {f['pid']} (SIGSTOP)"]
        # Seen while the process really was stopped (the watch reads its state from /proc),
        # whatever the poll's latency on a loaded machine; the freezer stamps "stopped"
        # just after its SIGSTOP.
        assert f["stopped"] - 1 <= start <= f["resumed"], (f, start)
    assert sum(label.startswith(OPERATOR_THAWED) for label, _ in marks) >= len(frozen) - 1
    print(f"outcomes: {outcomes}; {len(frozen)} freezes of {FREEZE:.0f}s")
