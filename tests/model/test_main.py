"""The command line: bad arguments exit 2 with one line; a started model reports ready,
writes its pid, is attributed in the audit log by its user agent, and stops at SIGTERM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .scene import start_model


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mochaos.model", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_unknown_profile_exits_2_with_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    proc = run_cli("--profile", "main", "--kubeconfig", str(kubeconfig), "--namespace", "ns")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    for name in ("pre-587", "upstream", "eb9b356", "pr592", "fixed"):
        assert name in lines[0]


def test_missing_kubeconfig_exits_2_with_one_line(tmp_path: Path) -> None:
    proc = run_cli("--profile", "fixed", "--kubeconfig", str(tmp_path / "nope"), "--namespace", "n")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "kubeconfig" in proc.stderr


def test_ready_attributed_and_stopped_by_sigterm(
    cluster, namespace: str, tmp_path: Path, model_api
) -> None:
    agent = f"mochaos-model-test/{os.getpid()}-{time.time_ns()}"
    model = start_model(
        kubeconfig=cluster.kubeconfig,
        namespace=namespace,
        profile="eb9b356",
        workdir=tmp_path,
        extra=("--user-agent", agent),
    )
    try:
        assert (tmp_path / "model-eb9b356.ready").read_text() == str(model.proc.pid)
        ready = model.lines("mochaos model ready")
        assert ready and ready[0]["profile"] == "upstream"
        model.proc.send_signal(signal.SIGTERM)
        assert model.proc.wait(timeout=2) == 0
    finally:
        model.stop()
    if cluster.audit_log is None or not Path(cluster.audit_log).is_file():
        pytest.skip("the cluster keeps no audit log")
    with open(cluster.audit_log, "rb") as fh:
        fh.seek(max(0, fh.seek(0, os.SEEK_END) - 8_000_000))
        assert agent.encode() in fh.read()
