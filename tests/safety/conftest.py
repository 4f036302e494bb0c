"""Fixtures of the safety tests (helpers in :mod:`helpers`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .helpers import ChildRun, private_cluster_name, remove_private_cluster, run_child


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
