"""A kwokctl that hangs leaves what it printed in the cluster's kwokctl log, which the
timeout's error points at (before, the log held nothing of the killed command), and its last
line is in the error itself."""

from __future__ import annotations

import pytest

from mochaos.binaries import control_plane
from mochaos.cluster.local import LocalProvider
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
