"""Commands run inside a kind node: container ids, freeze/thaw, audit-log files."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from mochaos.cluster import kind_node
from mochaos.errors import InfraError


class Node:
    """An engine stand-in that records ``docker exec`` into nodes and answers from a script."""

    def __init__(self, answers: dict[str, tuple[int, str]] | None = None) -> None:
        self.answers = answers or {}
        self.execs: list[tuple[str, list[str]]] = []

    def exec(self, container: str, argv: Sequence[str]) -> tuple[int, str]:
        self.execs.append((container, list(argv)))
        return self.answers.get(argv[0] if argv[0] != "ctr" else argv[4], (0, ""))


def test_container_id_is_the_containerd_id_of_a_pod_status() -> None:
    assert kind_node.container_id("containerd://4f1c9a") == "4f1c9a"
    for bad in ("docker://4f1c9a", "4f1c9a", "containerd://"):
        with pytest.raises(InfraError, match="is not a containerd one"):
            kind_node.container_id(bad)


def test_freeze_and_thaw_are_ctr_task_pause_and_resume_in_the_k8s_io_namespace() -> None:
    node = Node()
    kind_node.freeze(node, "mochaos-control-plane", "abc")
    kind_node.thaw(node, "mochaos-control-plane", "abc")
    assert node.execs == [
        ("mochaos-control-plane", ["ctr", "--namespace", "k8s.io", "task", "pause", "abc"]),
        ("mochaos-control-plane", ["ctr", "--namespace", "k8s.io", "task", "resume", "abc"]),
    ]


def test_a_failed_freeze_is_one_line_naming_the_node_and_how_to_look() -> None:
    node = Node({"pause": (1, 'ctr: container "abc" not found\n')})
    with pytest.raises(InfraError) as info:
        kind_node.freeze(node, "m-control-plane", "abcdef0123456789")
    assert str(info.value) == (
        "`ctr task pause abcdef012345` in node m-control-plane failed (exit 1): ctr: container "
        '"abc" not found: check the container with `docker exec m-control-plane ctr -n k8s.io '
        "task ls`"
    )


def test_audit_log_files_are_opened_and_removed_by_the_node() -> None:
    node = Node()
    assert kind_node.open_file(node, "n", "/var/log/a.log") == ""
    assert kind_node.empty_directory(node, "n", "/var/log/audit") == ""
    assert node.execs == [
        ("n", ["chmod", "0644", "/var/log/a.log"]),
        ("n", ["find", "/var/log/audit", "-mindepth", "1", "-delete"]),
    ]
    failing = Node({"find": (1, "find: '/var/log/audit': No such file or directory\n")})
    assert kind_node.empty_directory(failing, "n", "/var/log/audit") == (
        "find: '/var/log/audit': No such file or directory"
    )
    assert kind_node.open_file(Node({"chmod": (1, "")}), "n", "/x") == "exit 1"
