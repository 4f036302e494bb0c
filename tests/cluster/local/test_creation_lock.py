"""Cluster creations are serialised machine-wide, across state folders: a new cluster's
ports are chosen under the lock (two clusters created at once would otherwise take the same
ones), and a private state folder (``MOCHAOS_STATE``, as the safety tests and a second
user's runs have) used to come with a lock of its own. No cluster needed."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from mochaos.cluster.local.local_provider import LocalProvider

OTHER = """
import sys
import tempfile
import filelock
from mochaos.cluster.local.local_provider import LocalProvider
try:
    LocalProvider(name="mc-lock-b").creation_lock().acquire(timeout=0.5)
except filelock.Timeout:
    sys.exit(3)
"""
"""Another process, in another state folder, trying to create a cluster: exit 3 when it
has to wait."""


def test_a_creation_in_another_state_folder_waits(tmp_path, monkeypatch):
    # A temporary folder of the test's own: the machine's real lock is taken by every
    # cluster the other tests create meanwhile.
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "a"))
    env = {**os.environ, "MOCHAOS_STATE": str(tmp_path / "b"), "TMPDIR": str(tmp_path / "tmp")}
    with LocalProvider(name="mc-lock-a").creation_lock():
        other = subprocess.run([sys.executable, "-c", OTHER], env=env)
    assert other.returncode == 3, "a creation in another state folder did not wait"
    again = subprocess.run([sys.executable, "-c", OTHER], env=env)
    assert again.returncode == 0, "the lock was not released"
