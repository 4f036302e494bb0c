"""The kind provider without Docker: its generated config and its exact command lines."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from mochaos import exits
from mochaos.cluster.kind.engine_host import RUNTIME_NAME
from mochaos.cluster.kind.host_facts import HostFacts
from mochaos.cluster.kind.kind_config import (
    AUDIT_POLICY,
    NODE_IMAGE,
    NODE_LOG_DIR,
    NODE_POLICY_DIR,
    PortMapping,
    kind_config,
    node_kubernetes_version,
)
from mochaos.cluster.kind.kind_provider import KindProvider
from mochaos.errors import BuildError, InfraError, UsageError
from mochaos.tooling.runner import RecordingRunner, Result

KIND_OK = "kind v0.33.0 go1.26.8 linux/amd64\n"
FULL_HOST = HostFacts(missing_caps=(), cgroup_version="2")
"""A host with every capability and cgroup v2: no workaround."""
OUR_HOST = HostFacts(missing_caps=("CAP_SYS_RESOURCE",), cgroup_version="1")
"""Our build machines: CAP_SYS_RESOURCE missing from the bounding set, cgroup v1."""


CLASSIC = {
    "ServerVersion": "28.2.2",
    "CgroupVersion": "2",
    "Driver": "overlay2",
    "DriverStatus": [["Backing Filesystem", "extfs"], ["Supports d_type", "true"]],
    "Architecture": "x86_64",
}
CONTAINERD = {
    **CLASSIC,
    "ServerVersion": "29.1.3",
    "Driver": "overlayfs",
    "DriverStatus": [["driver-type", "io.containerd.snapshotter.v1"]],
}


class FakeEngine:
    """A Docker engine that answers from memory and records what was asked."""

    def __init__(
        self,
        *,
        info: dict | None = None,
        images: Sequence[str] = (),
        exec_answer: tuple[int, str] = (0, ""),
    ) -> None:
        self._info = dict(info or CLASSIC)
        self.images = set(images)
        self.pulled: list[str] = []
        self.execs: list[tuple[str, list[str]]] = []
        self.exec_answer = exec_answer

    def info(self) -> dict:
        return self._info

    def has_image(self, ref: str) -> bool:
        return ref in self.images

    def pull(self, ref: str, *, progress) -> None:
        self.pulled.append(ref)
        progress(f"pulling {ref}: 1/1 layers done")
        self.images.add(ref)

    def exec(self, container: str, argv: Sequence[str]) -> tuple[int, str]:
        self.execs.append((container, list(argv)))
        return self.exec_answer


def tools_dir(tmp_path: Path, *names: str) -> str:
    """A directory holding do-nothing executables, used as the PATH."""
    d = tmp_path / "bin"
    d.mkdir(exist_ok=True)
    for name in names:
        exe = d / name
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)
    return str(d)


def provider(tmp_path: Path, runner: RecordingRunner, **kw) -> KindProvider:
    kw.setdefault("engine", FakeEngine(images=[NODE_IMAGE]))
    kw.setdefault("progress", lambda line: None)
    kw.setdefault("host", FULL_HOST)
    return KindProvider(
        runner=runner,
        state_dir=tmp_path / "state",
        search_path=tools_dir(tmp_path, "kind", "docker"),
        **kw,
    )


# -- the generated config -----------------------------------------------------------


def _patch(config: dict) -> dict:
    text = config["nodes"][0]["kubeadmConfigPatches"][0]
    return yaml.safe_load(text)


def test_node_image_is_pinned_by_digest_for_the_pinned_kind() -> None:
    assert re.fullmatch(r"kindest/node:v1\.\d+\.\d+@sha256:[0-9a-f]{64}", NODE_IMAGE)
    assert node_kubernetes_version(NODE_IMAGE) == (1, 36, 4)


def test_kind_config_is_valid_yaml_with_the_pinned_image(tmp_path: Path) -> None:
    config = kind_config(name="mochaos", node_image=NODE_IMAGE, audit_dir=tmp_path, workers=1)
    text = yaml.safe_dump(config)
    again = yaml.safe_load(text)
    assert again == config
    assert again["kind"] == "Cluster"
    assert again["apiVersion"] == "kind.x-k8s.io/v1alpha4"
    assert [n["role"] for n in again["nodes"]] == ["control-plane", "worker"]
    assert {n["image"] for n in again["nodes"]} == {NODE_IMAGE}


def test_kind_config_mounts_the_audit_policy_and_log(tmp_path: Path) -> None:
    config = kind_config(name="mochaos", node_image=NODE_IMAGE, audit_dir=tmp_path)
    mounts = {m["containerPath"]: m for m in config["nodes"][0]["extraMounts"]}
    assert mounts[NODE_POLICY_DIR] == {
        "hostPath": str(tmp_path / "policy"),
        "containerPath": NODE_POLICY_DIR,
        "readOnly": True,
    }
    assert mounts[NODE_LOG_DIR]["hostPath"] == str(tmp_path / "log")
    assert not mounts[NODE_LOG_DIR].get("readOnly")
    patch = _patch(config)
    assert patch["kind"] == "ClusterConfiguration"
    volumes = {v["name"]: v for v in patch["apiServer"]["extraVolumes"]}
    # The apiserver's static pod sees the same node paths the extraMounts provide.
    assert volumes["audit-policies"]["hostPath"] == NODE_POLICY_DIR
    assert volumes["audit-policies"]["readOnly"] is True
    assert volumes["audit-logs"]["hostPath"] == NODE_LOG_DIR
    assert volumes["audit-logs"]["readOnly"] is False


def test_kubeadm_patch_uses_v1beta4_name_value_args_for_kubernetes_1_36(tmp_path: Path) -> None:
    patch = _patch(kind_config(name="m", node_image=NODE_IMAGE, audit_dir=tmp_path))
    assert patch["apiVersion"] == "kubeadm.k8s.io/v1beta4"
    args = {a["name"]: a["value"] for a in patch["apiServer"]["extraArgs"]}
    assert args["audit-policy-file"] == f"{NODE_POLICY_DIR}/audit-policy.yaml"
    assert args["audit-log-path"] == f"{NODE_LOG_DIR}/audit.log"
    assert all(isinstance(v, str) for v in args.values())


def test_the_single_control_planes_components_do_not_elect_a_leader(tmp_path: Path) -> None:
    patch = _patch(kind_config(name="m", node_image=NODE_IMAGE, audit_dir=tmp_path))
    for component in ("controllerManager", "scheduler"):
        assert patch[component]["extraArgs"] == [{"name": "leader-elect", "value": "false"}]
    old = "kindest/node:v1.35.8@sha256:" + "0" * 64
    patch = _patch(kind_config(name="m", node_image=old, audit_dir=tmp_path))
    assert patch["scheduler"]["extraArgs"] == {"leader-elect": "false"}


def test_kubeadm_patch_uses_a_v1beta3_map_before_kubernetes_1_36(tmp_path: Path) -> None:
    image = "kindest/node:v1.35.8@sha256:" + "0" * 64
    patch = _patch(kind_config(name="m", node_image=image, audit_dir=tmp_path))
    assert patch["apiVersion"] == "kubeadm.k8s.io/v1beta3"
    assert patch["apiServer"]["extraArgs"]["audit-log-path"] == f"{NODE_LOG_DIR}/audit.log"


def test_kind_config_publishes_extra_ports(tmp_path: Path) -> None:
    config = kind_config(
        name="m",
        node_image=NODE_IMAGE,
        audit_dir=tmp_path,
        port_mappings=[PortMapping(container_port=30900, host_port=9000)],
    )
    assert config["nodes"][0]["extraPortMappings"] == [
        {"containerPort": 30900, "hostPort": 9000, "listenAddress": "127.0.0.1", "protocol": "TCP"}
    ]
    plain = kind_config(name="m", node_image=NODE_IMAGE, audit_dir=tmp_path)
    assert "extraPortMappings" not in plain["nodes"][0]


def test_node_image_without_a_version_tag_is_refused() -> None:
    with pytest.raises(UsageError, match="cannot tell the Kubernetes version"):
        node_kubernetes_version("my/node@sha256:" + "0" * 64)
    with pytest.raises(UsageError):
        KindProvider(node_image="my/node:latest")


def test_audit_policy_is_a_policy_that_keeps_metadata() -> None:
    policy = yaml.safe_load(AUDIT_POLICY.read_text())
    assert policy["apiVersion"] == "audit.k8s.io/v1"
    assert policy["kind"] == "Policy"
    assert policy["rules"][-1] == {"level": "Metadata"}
    dropped = [r for r in policy["rules"] if r["level"] == "None"]
    assert any("leases" in g["resources"] for r in dropped for g in r.get("resources", []))


# -- command lines ----------------------------------------------------------------------


def test_up_creates_a_cluster_with_the_exact_kind_command(tmp_path: Path) -> None:
    runner = RecordingRunner({"kind version": KIND_OK, "kind get clusters": "other\n"})
    engine = FakeEngine(images=[NODE_IMAGE])
    p = provider(tmp_path, runner, engine=engine)
    assert p.ensure_cluster() is True
    state = tmp_path / "state" / "mochaos"
    assert runner.commands() == [
        "kind version",
        "kind get clusters",
        f"kind create cluster --name mochaos --config {state / 'kind-config.yaml'} "
        f"--image {NODE_IMAGE} --kubeconfig {state / 'kubeconfig'} --wait 300s",
    ]
    written = yaml.safe_load((state / "kind-config.yaml").read_text())
    assert written["nodes"][0]["image"] == NODE_IMAGE
    assert (state / "audit" / "policy" / "audit-policy.yaml").read_text() == (
        AUDIT_POLICY.read_text()
    )
    assert engine.execs == [
        ("mochaos-control-plane", ["chmod", "0644", f"{NODE_LOG_DIR}/audit.log"])
    ]


def test_up_reuses_a_running_cluster_and_exports_its_kubeconfig(tmp_path: Path) -> None:
    runner = RecordingRunner(
        {
            "kind version": KIND_OK,
            "kind get clusters": "mochaos\n",
            "kind get kubeconfig": "apiVersion: v1\nkind: Config\n",
        }
    )
    p = provider(tmp_path, runner)
    assert p.ensure_cluster() is False
    assert runner.commands() == [
        "kind version",
        "kind get clusters",
        "kind get kubeconfig --name mochaos",
    ]
    assert p.kubeconfig_path().read_text() == "apiVersion: v1\nkind: Config\n"
    assert p.kubeconfig_path().stat().st_mode & 0o077 == 0


def test_cluster_name_flows_into_every_command(tmp_path: Path) -> None:
    runner = RecordingRunner({"kind version": KIND_OK})
    p = provider(tmp_path, runner, name="ci-42")
    p.ensure_cluster()
    p.load_image("repo/op:t")
    p.down()
    assert p.context == "kind-ci-42"
    assert all("ci-42" in c for c in runner.commands()[2:])


def test_load_image_pulls_only_when_missing(tmp_path: Path) -> None:
    runner = RecordingRunner({"kind version": KIND_OK})
    engine = FakeEngine(images=["matrixorigin/matrixone:1.2.3", NODE_IMAGE])
    p = provider(tmp_path, runner, engine=engine)
    p.load_image("matrixorigin/matrixone-operator:nightly-abc1234-20260601")
    p.load_image("matrixorigin/matrixone:1.2.3")
    assert engine.pulled == ["matrixorigin/matrixone-operator:nightly-abc1234-20260601"]
    # The classic image store: kind's own docker-image load works.
    assert [c for c in runner.commands() if c.startswith(("kind load", "docker"))] == [
        "kind load docker-image --name mochaos "
        "matrixorigin/matrixone-operator:nightly-abc1234-20260601",
        "kind load docker-image --name mochaos matrixorigin/matrixone:1.2.3",
    ]


def test_down_deletes_unless_the_cluster_is_kept(tmp_path: Path) -> None:
    runner = RecordingRunner({"kind version": KIND_OK})
    provider(tmp_path, runner, keep_cluster=True).down()
    assert runner.commands() == []
    provider(tmp_path, runner).down()
    kubeconfig = tmp_path / "state" / "mochaos" / "kubeconfig"
    assert runner.commands()[-1] == f"kind delete cluster --name mochaos --kubeconfig {kubeconfig}"


def test_down_empties_the_root_owned_audit_log_directory_through_the_node_first(
    tmp_path: Path,
) -> None:
    runner = RecordingRunner({"kind version": KIND_OK})
    engine = FakeEngine()
    provider(tmp_path, runner, engine=engine).down()
    # The node (root) deletes what the apiserver wrote; the host user can then remove the rest.
    assert engine.execs == [
        ("mochaos-control-plane", ["sh", "-c", 'rm -rf -- "$1"/*', "sh", NODE_LOG_DIR])
    ]
    assert runner.commands()[-1].startswith("kind delete cluster --name mochaos")


def test_down_says_how_to_remove_the_audit_log_when_the_node_cannot(tmp_path: Path) -> None:
    runner = RecordingRunner({"kind version": KIND_OK})
    lines: list[str] = []
    engine = FakeEngine(exec_answer=(1, "No such container: mochaos-control-plane"))
    provider(tmp_path, runner, engine=engine, progress=lines.append).down()
    log_dir = tmp_path / "state" / "mochaos" / "audit" / "log"
    assert lines == [
        "could not empty the audit log directory in node mochaos-control-plane "
        f"(No such container: mochaos-control-plane); remove {log_dir} as root"
    ]
    assert runner.commands()[-1].startswith("kind delete cluster")


def test_missing_kind_is_built_from_its_module_and_a_failed_build_says_why(
    tmp_path: Path,
) -> None:
    runner = RecordingRunner({"kind version": KIND_OK, "kind get clusters": "\n"})
    built = tmp_path / "cache" / "kind"
    p = provider(tmp_path, runner, build_kind=lambda: str(built))
    (tmp_path / "nokind").mkdir()
    p.search_path = tools_dir(tmp_path / "nokind", "docker")
    p.ensure_cluster()
    assert runner.calls[0][0] == str(built)

    def no_go() -> str:
        raise BuildError("go not found", hint="install Go >= 1.26 and put it on PATH")

    p = provider(tmp_path, RecordingRunner(), build_kind=no_go)
    p.search_path = tools_dir(tmp_path / "nokind", "docker")
    with pytest.raises(InfraError) as info:
        p.up()
    assert str(info.value) == "go not found: install Go >= 1.26 and put it on PATH"
    assert info.value.exit_code == exits.INFRA


def test_missing_docker_cli_is_an_infra_error(tmp_path: Path) -> None:
    runner = RecordingRunner({"kind version": KIND_OK})
    p = KindProvider(runner=runner, state_dir=tmp_path, search_path=tools_dir(tmp_path, "kind"))
    with pytest.raises(InfraError) as info:
        p.up()
    assert str(info.value) == (
        "docker not found on PATH: install it with Docker Engine >= 20.10 "
        "(e.g. `apt-get install docker.io`)"
    )


def test_a_failing_kind_create_is_an_infra_error_with_its_reason(tmp_path: Path) -> None:
    failure = Result(("kind",), 1, "", "ERROR: failed to create cluster: node(s) already exist")
    runner = RecordingRunner({"kind version": KIND_OK, "kind create cluster": failure})
    with pytest.raises(InfraError) as info:
        provider(tmp_path, runner).ensure_cluster()
    assert str(info.value).startswith(
        "kind create cluster mochaos failed (exit 1): failed to create cluster: node(s) already"
    )


# -- the engine's properties decide before kind runs ------------------------------------------


def test_our_hosts_gaps_become_the_workarounds_they_need_with_the_reason(tmp_path: Path) -> None:
    runner = RecordingRunner({"kind version": KIND_OK, "kind get clusters": "\n"})
    lines: list[str] = []
    engine = FakeEngine(
        info={**CLASSIC, "CgroupVersion": "1", "DefaultRuntime": RUNTIME_NAME},
        images=[NODE_IMAGE],
    )
    provider(tmp_path, runner, engine=engine, host=OUR_HOST, progress=lines.append).ensure_cluster()
    config = yaml.safe_load((tmp_path / "state" / "mochaos" / "kind-config.yaml").read_text())
    assert config["containerdConfigPatches"] == [
        '[plugins."io.containerd.grpc.v1.cri"]\n  restrict_oom_score_adj = true\n'
    ]
    kubelet = yaml.safe_load(config["nodes"][0]["kubeadmConfigPatches"][1])
    assert kubelet == {
        "kind": "KubeletConfiguration",
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "failCgroupV1": False,
    }
    assert [ln for ln in lines if ln.startswith("kind: ")] == [
        "kind: containerd restrict_oom_score_adj, because lowering oom_score_adj needs "
        "CAP_SYS_RESOURCE, which the nodes cannot have: pod sandboxes would fail to start",
        "kind: kubelet failCgroupV1: false, because the Docker host runs cgroup v1, which "
        "kubelet >= 1.35 refuses unless told not to",
    ]


def test_a_full_host_on_cgroup_v2_gets_no_workaround(tmp_path: Path) -> None:
    runner = RecordingRunner({"kind version": KIND_OK, "kind get clusters": "\n"})
    lines: list[str] = []
    provider(tmp_path, runner, progress=lines.append).ensure_cluster()
    config = yaml.safe_load((tmp_path / "state" / "mochaos" / "kind-config.yaml").read_text())
    assert "containerdConfigPatches" not in config
    assert len(config["nodes"][0]["kubeadmConfigPatches"]) == 1
    assert not [ln for ln in lines if ln.startswith("kind: ")]


def test_an_engine_without_the_shim_is_refused_where_the_host_lacks_capabilities(
    tmp_path: Path,
) -> None:
    runner = RecordingRunner({"kind version": KIND_OK})
    engine = FakeEngine(info={**CLASSIC, "DefaultRuntime": "runc"})
    p = provider(tmp_path, runner, engine=engine, host=OUR_HOST)
    with pytest.raises(InfraError) as info:
        p.ensure_cluster()
    assert str(info.value).startswith(
        "the Docker engine's default runtime (runc) cannot start kind's privileged nodes here: "
        "the capability bounding set lacks CAP_SYS_RESOURCE"
    )
    assert str(info.value).endswith("`python -m mochaos kind engine up`")
    assert runner.commands() == ["kind version"]


def test_the_offline_node_image_is_used_when_kinds_cannot_be_pulled(tmp_path: Path) -> None:
    class Offline(FakeEngine):
        def pull(self, ref: str, *, progress) -> None:
            raise InfraError("pulling failed: no such host registry-1.docker.io")

    runner = RecordingRunner({"kind version": KIND_OK, "kind get clusters": "\n"})
    lines: list[str] = []
    p = provider(tmp_path, runner, engine=Offline(), progress=lines.append)
    offline = "mochaos.local/kind-node:v1.36.3-0123456789ab"
    p.offline_node_image = lambda: offline  # the build itself: tests/images
    p.ensure_cluster()
    assert f"--image {offline}" in runner.commands()[-1]
    assert "kind's node image cannot be pulled (pulling failed: no such host " in "".join(lines)


def test_the_offline_node_image_networks_one_node_only(tmp_path: Path) -> None:
    runner = RecordingRunner({"kind version": KIND_OK, "kind get clusters": "\n"})
    p = provider(tmp_path, runner, node_image="mochaos.local/kind-node:v1.36.3-0123", workers=1)
    with pytest.raises(UsageError, match="networks one node only"):
        p.ensure_cluster()


def test_a_recent_engine_on_cgroup_v2_passes(tmp_path: Path) -> None:
    runner = RecordingRunner({"kind version": KIND_OK, "kind get clusters": "\n"})
    assert provider(tmp_path, runner).ensure_cluster() is True


# -- loading images the way the image store allows -----------------------------------------------


def test_load_image_on_the_containerd_store_saves_one_platform_and_loads_the_archive(
    tmp_path: Path,
) -> None:
    runner = RecordingRunner({"kind version": KIND_OK})
    lines: list[str] = []
    ref = "matrixorigin/matrixone-operator:nightly-abc1234-20260601"
    p = provider(tmp_path, runner, engine=FakeEngine(info=CONTAINERD, images=[ref]),
                 progress=lines.append)  # fmt: skip
    p.load_image(ref)
    archive = (
        tmp_path
        / "state"
        / "mochaos"
        / "images"
        / ("matrixorigin_matrixone-operator_nightly-abc1234-20260601.tar")
    )
    assert runner.commands()[1:] == [
        f"docker image save --platform linux/amd64 --output {archive} {ref}",
        f"kind load image-archive --name mochaos {archive}",
    ]
    assert lines[-1].startswith(f"{ref}: loaded (containerd image store: a single-platform")


def test_load_image_uses_the_nodes_platform(tmp_path: Path) -> None:
    runner = RecordingRunner({"kind version": KIND_OK})
    arm = {**CONTAINERD, "Architecture": "aarch64"}
    provider(tmp_path, runner, engine=FakeEngine(info=arm, images=["r/x:1"])).load_image("r/x:1")
    assert "--platform linux/arm64" in runner.commands()[1]


def test_load_image_leaves_the_image_to_the_nodes_when_the_export_is_impossible(
    tmp_path: Path,
) -> None:
    failure = Result(("docker",), 125, "", "unknown flag: --platform\n")
    runner = RecordingRunner({"kind version": KIND_OK, "docker image save": failure})
    lines: list[str] = []
    p = provider(tmp_path, runner, engine=FakeEngine(info=CONTAINERD, images=["r/x:1"]),
                 progress=lines.append)  # fmt: skip
    p.load_image("r/x:1")
    assert not [c for c in runner.commands() if c.startswith("kind load")]
    assert lines[0] == (
        "not loading r/x:1 into kind: containerd image store and `docker image save "
        "--platform` failed: unknown flag: --platform; the nodes will pull it"
    )


def test_a_failing_archive_load_names_the_method_and_the_reason(tmp_path: Path) -> None:
    failure = Result(("kind",), 1, "", "ERROR: failed to load image: no nodes found\n")
    runner = RecordingRunner({"kind version": KIND_OK, "kind load image-archive": failure})
    p = provider(tmp_path, runner, engine=FakeEngine(info=CONTAINERD, images=["r/x:1"]))
    with pytest.raises(InfraError) as info:
        p.load_image("r/x:1")
    assert str(info.value).startswith(
        "kind load image-archive r/x:1 (containerd image store: a single-platform linux/amd64 "
        "archive, since `kind load docker-image` fails on multi-platform images there) failed "
        "(exit 1): failed to load image: no nodes found: "
    )
    assert not list((tmp_path / "state" / "mochaos" / "images").iterdir())
