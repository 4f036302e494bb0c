"""Commands run inside a kind node: container ids, freeze/thaw, audit-log files."""

from __future__ import annotations

import functools
import shutil
import stat
import subprocess
import tarfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from mochaos.cluster.kind import kind_node
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
        ("n", ["sh", "-c", 'rm -rf -- "$1"/*', "sh", "/var/log/audit"]),
    ]
    failing = Node({"sh": (1, "rm: can't remove '/var/log/audit/a.log': Busy\nmore\n")})
    assert kind_node.empty_directory(failing, "n", "/var/log/audit") == (
        "rm: can't remove '/var/log/audit/a.log': Busy"
    )
    assert kind_node.open_file(Node({"chmod": (1, "")}), "n", "/x") == "exit 1"


# -- through a real engine ----------------------------------------------------------------------

BUSYBOX = Path("/bin/busybox")


@pytest.fixture()
def node_probe(tmp_path: Path) -> Iterator[tuple[Any, str, Path]]:
    """A container standing in for a kind node: a host directory mounted where the audit log is.

    Built with ``docker import`` from the host's static busybox (nothing pulled); skipped
    without a Docker engine or without busybox.
    """
    from mochaos.cluster.kind.docker_engine import DockerEngine

    docker = shutil.which("docker")
    if docker is None or not BUSYBOX.is_file():
        pytest.skip(
            "needs the docker CLI and a static /bin/busybox (apt-get install busybox-static)"
        )
    try:
        engine = DockerEngine()
    except InfraError as err:
        pytest.skip(f"no Docker engine reachable: {err}")
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    shutil.copy(BUSYBOX, root / "bin" / "busybox")
    for applet in ("sh", "rm", "chmod", "sleep"):
        (root / "bin" / applet).symlink_to("busybox")
    with tarfile.open(tmp_path / "rootfs.tar", "w") as tar:
        tar.add(root, arcname=".")
    tag = uuid.uuid4().hex[:8]
    image, name = f"mochaos/node-probe:{tag}", f"mochaos-node-probe-{tag}"
    audit = tmp_path / "audit"
    audit.mkdir()
    run = functools.partial(subprocess.run, capture_output=True, timeout=120)
    run([docker, "import", str(tmp_path / "rootfs.tar"), image], check=True)
    run([docker, "run", "-d", "--name", name, "-v", f"{audit}:/var/log/kubernetes/audit",
         image, "/bin/sleep", "600"], check=True)  # fmt: skip
    yield engine, name, audit
    run([docker, "rm", "-f", name])
    run([docker, "image", "rm", image])


def test_the_audit_log_is_opened_and_emptied_through_a_real_node(node_probe) -> None:
    engine, node, audit = node_probe
    script = "cd /var/log/kubernetes/audit && echo x > a.log && chmod 600 a.log && echo y > b.log"
    code, _ = engine.exec(node, ["sh", "-c", script])
    assert code == 0
    assert kind_node.open_file(engine, node, "/var/log/kubernetes/audit/a.log") == ""
    assert stat.S_IMODE((audit / "a.log").stat().st_mode) == 0o644
    assert kind_node.empty_directory(engine, node, "/var/log/kubernetes/audit") == ""
    assert list(audit.iterdir()) == []
    assert kind_node.empty_directory(engine, node, "/var/log/kubernetes/audit") == ""
    assert kind_node.open_file(engine, node, "/var/log/kubernetes/audit/gone.log").startswith(
        "chmod: "
    )
