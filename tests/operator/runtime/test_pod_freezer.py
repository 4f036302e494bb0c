"""Pausing an in-cluster operator: every container of its pod frozen on its node, then thawed."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any

import pytest

from mochaos.errors import InfraError
from mochaos.operator.runtime.pod_freezer import Frozen, PodFreezer


class Node:
    def __init__(self, fail_on: str = "") -> None:
        self.fail_on = fail_on
        self.execs: list[list[str]] = []

    def exec(self, container: str, argv: Sequence[str]) -> tuple[int, str]:
        self.execs.append([container, *argv[3:]])
        return (1, "boom") if argv[-1] == self.fail_on else (0, "")


def pod(*ids: str, node: str = "mochaos-control-plane") -> Any:
    return SimpleNamespace(
        metadata=SimpleNamespace(name="op-1"),
        spec=SimpleNamespace(node_name=node),
        status=SimpleNamespace(
            container_statuses=[SimpleNamespace(container_id=f"containerd://{i}") for i in ids]
        ),
    )


def test_freeze_every_container_on_the_pods_node_then_thaw() -> None:
    node = Node()
    freezer = PodFreezer(lambda: node)
    frozen = freezer.freeze(pod("a", "b"))
    assert frozen == Frozen("mochaos-control-plane", ("a", "b"))
    freezer.thaw(frozen)
    assert node.execs == [
        ["mochaos-control-plane", "task", "pause", "a"],
        ["mochaos-control-plane", "task", "pause", "b"],
        ["mochaos-control-plane", "task", "resume", "a"],
        ["mochaos-control-plane", "task", "resume", "b"],
    ]


def test_a_failed_freeze_thaws_what_it_froze() -> None:
    node = Node(fail_on="b")
    with pytest.raises(InfraError, match="ctr task pause b"):
        PodFreezer(lambda: node).freeze(pod("a", "b"))
    assert node.execs[-1] == ["mochaos-control-plane", "task", "resume", "a"]


def test_a_pod_without_running_containers_cannot_be_frozen() -> None:
    with pytest.raises(InfraError, match="has no running container to freeze"):
        PodFreezer(Node).freeze(pod())
