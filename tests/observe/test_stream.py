"""The recorder streams its history to disk as it records, and follows the cluster's events."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from mochaos.cluster import events
from mochaos.observe.history import ActionRecord, History, Marker
from mochaos.observe.recorder import CLUSTER_COMPONENT, Recorder
from mochaos.observe.stream import FLUSH_PERIOD

CHILD = """
import sys, time
from pathlib import Path
from mochaos.observe.recorder import Recorder
rec = Recorder(None, namespace="ns", kinds=(), stream_to=Path(sys.argv[1]))
rec.start()
print("started", flush=True)
n = 0
while True:
    rec.record_action(action="create", kind="CNClaim", name=f"c{n}")
    n += 1
    time.sleep(0.001)
"""


def recorder(path: Path | None) -> Recorder:
    """A recorder without watches: entries come from actions, markers and followed files."""
    return Recorder(None, namespace="ns", kinds=(), stream_to=path)  # type: ignore[arg-type]


def test_the_history_is_on_disk_before_the_recorder_stops(tmp_path):
    path = tmp_path / "history.jsonl"
    rec = recorder(path)
    rec.start()
    try:
        first = rec.record_action(action="create", kind="CNClaim", name="x")
        rec.mark("scenario")
        deadline = time.monotonic() + 5
        while len(path.read_text().splitlines()) < 2 and time.monotonic() < deadline:
            time.sleep(FLUSH_PERIOD / 4)
        on_disk = History.from_jsonl(path)
        assert [e.seq for e in on_disk] == [0, 1]
        assert on_disk[0] == first
    finally:
        rec.stop()


def test_an_entry_completed_later_is_appended_again_and_supersedes(tmp_path):
    path = tmp_path / "history.jsonl"
    rec = recorder(path)
    rec.start()
    action = rec.record_action(action="delete_pod", kind="Pod", name="p", write_rv=7)
    rec.mark("after")
    time.sleep(FLUSH_PERIOD * 3)
    rec.resolve_action(action.seq, in_window=False)
    rec.stop()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["seq"] for line in lines] == [0, 1, 0], "appended, never rewritten in place"
    history = History.from_jsonl(path)
    assert list(history) == list(rec.history())
    assert isinstance(history[0], ActionRecord) and history[0].in_window is False


def test_stop_writes_everything_and_a_second_stop_is_harmless(tmp_path):
    path = tmp_path / "history.jsonl"
    rec = recorder(path)
    rec.start()
    for n in range(500):
        rec.record_action(action="create", kind="CNClaim", name=f"c{n}")
    rec.stop()
    rec.stop()
    assert list(History.from_jsonl(path)) == list(rec.history())


def test_a_kill_9_leaves_valid_json_lines_up_to_the_last_batch(tmp_path):
    path = tmp_path / "history.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"started\n"
        time.sleep(1.0)
        killed_at = time.time()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    history = History.from_jsonl(path)  # every line parses: no half-written entry
    assert [e.seq for e in history] == list(range(len(history)))
    assert len(history) > 100
    # Lost: only what was recorded since the last batch (a batch per FLUSH_PERIOD; the
    # bound is loose so a busy machine's scheduling does not make it flaky).
    assert killed_at - history[-1].t < 10 * FLUSH_PERIOD, killed_at - history[-1].t


def test_each_restart_in_the_cluster_events_file_becomes_a_cluster_marker(tmp_path):
    log = tmp_path / "events.jsonl"
    old = events.ClusterEvent(t=1.0, component="etcd", event="restarted", old_pid=1,
                              new_pid=2, exit="exit status 1")  # fmt: skip
    events.append(log, old)  # before the recorder: not this test's business
    rec = recorder(None)
    rec.start()
    rec.follow_cluster(log)
    try:
        time.sleep(0.3)
        restart = events.ClusterEvent(
            t=time.time(), component="kube-scheduler", event="restarted", old_pid=10,
            new_pid=11, exit="killed by SIGKILL", reason="leaderelection lost",
        )  # fmt: skip
        events.append(log, restart)
        got = rec.wait_for_entry(lambda e: isinstance(e, Marker), timeout=5, since=0)
    finally:
        rec.stop()
    assert isinstance(got, Marker)
    assert got.component == CLUSTER_COMPONENT and got.t == restart.t
    assert got.label == (
        "cluster: kube-scheduler restarted (pid 10 → 11): killed by SIGKILL; "
        "last log: leaderelection lost"
    )
    assert [m.label for m in rec.history().markers()] == [got.label], "the old event leaked"
