"""Fixtures of the safety tests (helpers in :mod:`helpers`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.child_runs import ChildRun, private_cluster_name, remove_private_cluster, run_child


@pytest.fixture
def child(tmp_path: Path) -> Callable[..., ChildRun]:
    """``child("suites", "-k", expr, env=...)``: run a child pytest to its end."""
    return lambda *args, **kw: run_child(tmp_path, *args, **kw)


@pytest.fixture
def private_cluster() -> Iterator[str]:
    """A private local cluster name; whatever cluster gets that name is removed afterwards."""
    name = private_cluster_name()
    yield name
    remove_private_cluster(name)


@pytest.fixture
def isolated_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A private local cluster in a private state folder: the environment for a child run.
    Its crash reaper sees only its own state (not the dead runs other tests plant in the
    shared one); the cluster is removed afterwards."""
    name = private_cluster_name()
    state = tmp_path / "state"
    yield {"MOCHAOS_CLUSTER_NAME": name, "MOCHAOS_STATE": str(state)}
    monkeypatch.setenv("MOCHAOS_STATE", str(state))
    remove_private_cluster(name)
