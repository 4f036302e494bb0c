"""A kwokctl that hangs leaves what it printed in the cluster's kwokctl log, which the
timeout's error points at (before, the log held nothing of the killed command), and its last
line is in the error itself (a JSON line as its level and message), with the last line each
component logged: a removed cluster takes its logs with it."""

from __future__ import annotations

import pytest

from mochaos.binaries import control_plane
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.errors import InfraError


def test_a_timed_out_kwokctl_leaves_its_output_in_the_log(tmp_path, monkeypatch):
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "state"))
    fake = tmp_path / "bin" / "kwokctl"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'Cluster is starting'\nexec sleep 30\n")
    fake.chmod(0o755)
    paths = dict(control_plane.binary_paths(), kwokctl=fake)
    monkeypatch.setattr(control_plane, "binary_paths", lambda: paths)
    provider = LocalProvider(name="mc-kwokctl-log")
    provider.workdir.mkdir(parents=True)

    with pytest.raises(InfraError, match="timed out after 1s") as err:
        provider._kwokctl("create", "cluster", timeout=1)
    # Where it hung is in the one line itself (a removed cluster's log is gone with it).
    assert "(its last line: Cluster is starting)" in str(err.value)

    log = provider.workdir / "mc-kwokctl-log.kwokctl.log"
    assert str(log) in str(err.value.hint)
    text = log.read_text()
    assert f"$ {fake} create cluster\n" in text, text
    assert "Cluster is starting" in text
    assert text.rstrip().endswith("(killed after 1s)")


def test_a_timeout_names_kwokctls_message_and_each_components_last_line(tmp_path, monkeypatch):
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "state"))
    fake = tmp_path / "bin" / "kwokctl"
    fake.parent.mkdir()
    line = ('{"time":"2026-12-02T05:46:46.98Z","level":"INFO","source":{"function":"sigs.k8s.io/'
            'kwok/pkg/kwokctl/cmd/create/cluster.runE","file":"cluster.go","line":449},'
            '"msg":"Waiting for cluster to be ready","cluster":"mc-x"}')  # fmt: skip
    fake.write_text(f"#!/bin/sh\necho '{line}'\nexec sleep 30\n")
    fake.chmod(0o755)
    paths = dict(control_plane.binary_paths(), kwokctl=fake)
    monkeypatch.setattr(control_plane, "binary_paths", lambda: paths)
    provider = LocalProvider(name="mc-kwokctl-tails")
    logs = provider.cluster_dir / "logs"
    logs.mkdir(parents=True)
    (logs / "etcd.log").write_text("ready\n\n")
    (logs / "kube-apiserver.log").write_text("E1202 bind: address already in use\n")

    with pytest.raises(InfraError) as err:
        provider._kwokctl("create", "cluster", timeout=1)
    text = str(err.value)
    assert "(its last line: INFO Waiting for cluster to be ready)" in text, text
    assert "etcd: ready; kube-apiserver: E1202 bind: address already in use" in text, text
