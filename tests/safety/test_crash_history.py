"""Nothing recorded is lost when pytest is killed with SIGKILL mid-scenario.

A child pytest runs the seed race on the fixed model and is killed a moment after the
platform agent's first migration request. The history it streamed must hold every write
that the apiserver's audit log shows by ``mochaos/chaos`` and ``mochaos/agent`` before
the kill (allowing for the last batch), parse as JSON lines, and be judged again offline.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

from mochaos.config import CheckOptions
from mochaos.invariants import evaluate
from mochaos.observe.audit import WRITE_VERBS, complete_events
from mochaos.observe.history import History
from mochaos.observe.stream import FLUSH_PERIOD

from support.child_runs import (
    ROOT,
    TIME_SCALE,
    child_env,
    needs_binaries,
    pytest_command,
    read_state,
)
from support.polling import wait_until

pytestmark = needs_binaries

SCENARIO = "test_scalein_during_migration and not race and not sweep"
OURS = ("mochaos/chaos", "mochaos/agent")
KINDS = {"cnclaims": "CNClaim", "cnclaimsets": "CNClaimSet", "cnpools": "CNPool", "pods": "Pod"}
ALLOWANCE = 3 * FLUSH_PERIOD
"""A write may be missing from the file if it completed this shortly before the kill: the
last batch, plus the response's way back to the client and into the recorder on a busy
2-core machine."""


def our_writes(audit_log: Path, offset: int, namespace: str) -> list[tuple[float, str, str]]:
    """(completion time, kind, name) of each write by chaos or agent in ``namespace``."""
    out = []
    for event in complete_events(audit_log, offset):
        ref = event.get("objectRef") or {}
        if (
            event.get("stage") == "ResponseComplete"
            and event.get("verb") in WRITE_VERBS
            and event.get("userAgent", "").startswith(OURS)
            and ref.get("namespace") == namespace
            and ref.get("resource") in KINDS
        ):
            done = datetime.fromisoformat(event["stageTimestamp"].replace("Z", "+00:00"))
            out.append((done.timestamp(), KINDS[ref["resource"]], ref.get("name", "")))
    return out  # fmt: skip


def test_a_kill_9_mid_scenario_loses_no_recorded_history(cluster, tmp_path):
    assert cluster.audit_log is not None
    offset = cluster.audit_log.stat().st_size
    cmd = pytest_command(tmp_path, "suites", "-k", SCENARIO, "--operator", "model:fixed")
    with (tmp_path / "child.log").open("wb") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=child_env(), stdout=log,
                                stderr=subprocess.STDOUT)  # fmt: skip
    try:
        state = wait_until(lambda: (s := read_state(proc.pid)) and s.get("namespaces") and s,
                           timeout=180, what="the child's namespace")  # fmt: skip
        (namespace,) = state["namespaces"]

        def agent_wrote() -> bool:
            writes = our_writes(cluster.audit_log, offset, namespace)  # type: ignore[arg-type]
            return any(kind == "CNClaim" for _, kind, _ in writes[-3:])

        wait_until(agent_wrote, timeout=120, what="the agent's first migration request")
        time.sleep(random.uniform(0.2, 1.5))  # somewhere in the race, not at a fixed point
        killed_at = time.time()
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    (path,) = (tmp_path / "reports" / "latest").glob("*/history.jsonl")
    history = History.from_jsonl(path)  # every line parses: no half-written entry
    assert [e.seq for e in history] == list(range(len(history)))
    audited = [
        (kind, name)
        for t, kind, name in our_writes(cluster.audit_log, offset, namespace)
        if t <= killed_at - ALLOWANCE
    ]
    assert len(audited) >= 5, audited
    recorded = Counter(
        (a.kind, a.name) for a in history.actions() if a.write_rv is not None or a.error
    )
    missing = Counter(audited) - recorded
    assert not missing, f"audited writes missing from the history: {dict(missing)}"
    print(f"{len(audited)} audited writes, all in the {len(history)} streamed entries; "
          f"last entry {killed_at - history[-1].t:.2f}s before the kill")  # fmt: skip

    # Judged again offline: the fixed model broke nothing up to the kill.
    options = CheckOptions.from_operator_time(time_scale=float(TIME_SCALE))
    failed = [v for v in evaluate(history, options, final=False) if v.failed]
    assert not failed, failed
