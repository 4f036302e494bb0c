"""Cluster creations are serialised machine-wide, across state folders: kwokctl picks the
same ports for two clusters created at once (it scans down from 32767), and a private state
folder (``MOCHAOS_STATE``, as the safety tests and a second user's runs have) used to come
with a lock of its own. No cluster needed."""

from __future__ import annotations

import os
import subprocess
import sys

from mochaos.cluster.local import LocalProvider

OTHER = """
import sys
import filelock
from mochaos.cluster.local import LocalProvider
try:
    LocalProvider(name="mc-lock-b").creation_lock().acquire(timeout=0.5)
except filelock.Timeout:
    sys.exit(3)
"""
"""Another process, in another state folder, trying to create a cluster: exit 3 when it
has to wait."""


def test_a_creation_in_another_state_folder_waits(tmp_path, monkeypatch):
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "a"))
    with LocalProvider(name="mc-lock-a").creation_lock():
        other = subprocess.run(
            [sys.executable, "-c", OTHER], env={**os.environ, "MOCHAOS_STATE": str(tmp_path / "b")}
        )
    assert other.returncode == 3, "a creation in another state folder did not wait"
    again = subprocess.run(
        [sys.executable, "-c", OTHER], env={**os.environ, "MOCHAOS_STATE": str(tmp_path / "b")}
    )
    assert again.returncode == 0, "the lock was not released"
