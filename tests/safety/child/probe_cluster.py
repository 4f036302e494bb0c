"""Run by the safety tests as a child pytest: the shortest test that uses the cluster fixture.

Not collected by ``pytest tests/`` (its name does not start with ``test_``); the
crash test runs it to let a fresh session reap what a killed one left behind.
"""

from __future__ import annotations

from kubernetes import client


def test_the_cluster_answers(kube) -> None:
    assert client.VersionApi(kube).get_code().git_version.startswith("v1.")
