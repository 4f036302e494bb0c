"""Rendered workloads -> the pods a kubelet would start, and the containers that stand for them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mochaos.errors import InfraError
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.runner import RecordingRunner

from trial.docker_pods import DockerPods
from trial.forwarding import needs_accept
from trial.pods import plan_pods, quantity_bytes

NS = "ns1"


def _workload(kind: str, name: str, component: str, **spec: Any) -> dict[str, Any]:
    labels = {"matrixorigin.io/component": component, "matrixorigin.io/instance": name}
    return {
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "replicas": spec.pop("replicas", 1),
            "template": {
                "metadata": {"labels": labels, "annotations": {"suffix": "abc123"}},
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "mo:1",
                            "command": ["/bin/sh", "/etc/x/start.sh"],
                            "env": [
                                {
                                    "name": "POD_NAME",
                                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                                },
                                {
                                    "name": "NAMESPACE",
                                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                                },
                                {
                                    "name": "POD_IP",
                                    "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
                                },
                                {
                                    "name": "CONFIG_SUFFIX",
                                    "valueFrom": {
                                        "fieldRef": {"fieldPath": "metadata.annotations['suffix']"}
                                    },
                                },
                                {
                                    "name": "KEY",
                                    "valueFrom": {"secretKeyRef": {"name": "minio", "key": "id"}},
                                },
                                {"name": "PLAIN", "value": "1"},
                            ],
                            "resources": {"limits": {"memory": "1536Mi"}},
                            "volumeMounts": [
                                {"name": "config", "mountPath": "/etc/x", "readOnly": True},
                                {"name": "mo-data", "mountPath": "/var/lib/matrixone"},
                            ],
                        }
                    ],
                    "volumes": [{"name": "config", "configMap": {"name": f"{name}-config"}}],
                    **spec.pop("pod", {}),
                },
            },
            **spec,
        },
    }


def _objects() -> list[dict[str, Any]]:
    log = _workload(
        "StatefulSet",
        "pool-log",
        "LogSet",
        serviceName="pool-log-headless",
        volumeClaimTemplates=[{"metadata": {"name": "mo-data"}}],
    )
    cn = _workload("CloneSet", "pool-cn", "", replicas=2, pod={"subdomain": "pool-cn-headless"})
    cn["spec"]["template"]["spec"]["volumes"].append({"name": "mo-data", "emptyDir": {}})
    dn = _workload(
        "StatefulSet",
        "pool-dn",
        "DNSet",
        serviceName="pool-dn-headless",
        volumeClaimTemplates=[{"metadata": {"name": "mo-data"}}],
    )
    discovery = {
        "kind": "Service",
        "metadata": {"name": "pool-log-discovery"},
        "spec": {"selector": {"matrixorigin.io/component": "LogSet"}},
    }
    configs = [
        {"kind": "ConfigMap", "metadata": {"name": f"{n}-config"}, "data": {"start.sh": f"# {n}"}}
        for n in ("pool-log", "pool-dn", "pool-cn")
    ]
    return [cn, dn, log, discovery, *configs]


def _plan() -> list:
    ips = iter(f"10.0.0.{i}" for i in range(10, 20))
    return plan_pods(_objects(), namespace=NS, ips=ips, secrets={"minio": {"id": "AKID"}})


def test_pods_come_log_first_then_tn_then_cns_each_with_its_address() -> None:
    plan = _plan()
    assert [(p.name, p.kind, p.ip) for p in plan] == [
        ("pool-log-0", "StatefulSet", "10.0.0.10"),
        ("pool-dn-0", "StatefulSet", "10.0.0.11"),
        ("pool-cn-0", "CloneSet", "10.0.0.12"),
        ("pool-cn-1", "CloneSet", "10.0.0.13"),
    ]


def test_the_environment_is_resolved_as_the_kubelet_resolves_it() -> None:
    cn = _plan()[3]
    assert dict(cn.env) == {
        "POD_NAME": "pool-cn-1",
        "NAMESPACE": NS,
        "POD_IP": "10.0.0.13",
        "CONFIG_SUFFIX": "abc123",
        "KEY": "AKID",
        "PLAIN": "1",
    }
    assert cn.command == ("/bin/sh", "/etc/x/start.sh")
    assert cn.memory_limit == 1536 * 2**20


def test_each_pod_has_its_cluster_names_and_its_volumes() -> None:
    log, dn, cn0, _ = _plan()
    assert log.names == ("pool-log-0.pool-log-headless.ns1.svc", "pool-log-discovery.ns1.svc")
    assert dn.names == ("pool-dn-0.pool-dn-headless.ns1.svc",)
    assert cn0.names == ("pool-cn-0.pool-cn-headless.ns1.svc",)
    config, data = log.mounts
    assert (config.path, config.files, config.readonly) == (
        "/etc/x",
        {"start.sh": "# pool-log"},
        True,
    )
    assert (data.path, data.files, data.readonly) == ("/var/lib/matrixone", None, False)


def test_what_the_trial_cannot_resolve_is_one_line() -> None:
    objects = _objects()
    with pytest.raises(InfraError, match="names Secret minio key id, which the trial was not"):
        plan_pods(objects, namespace=NS, ips=iter(["10.0.0.9"] * 9), secrets={})
    objects[0]["spec"]["template"]["spec"]["volumes"] = []
    with pytest.raises(InfraError, match="volume config is neither a ConfigMap"):
        plan_pods(objects, namespace=NS, ips=iter(["10.0.0.9"] * 9), secrets={"minio": {"id": "x"}})


def test_memory_quantities() -> None:
    assert quantity_bytes("1Gi") == 2**30
    assert quantity_bytes("512M") == 512 * 10**6
    with pytest.raises(ValueError):
        quantity_bytes("lots")


def test_a_pod_becomes_one_container_with_its_address_names_files_and_limit(tmp_path: Path):
    runner = RecordingRunner()
    pods = DockerPods(DockerCli(path="docker", runner=runner), name="t1", workdir=tmp_path)
    args = pods.create_args(_plan()[0])
    assert args[:4] == ["--name", "mochaos-trial-t1-pool-log-0", "--hostname", "pool-log-0"]
    assert args[args.index("--ip") : args.index("--ip") + 2] == ["--ip", "10.0.0.10"]
    assert "pool-log-discovery.ns1.svc" in args and "POD_IP=10.0.0.10" in args
    assert f"type=bind,source={tmp_path}/pool-log-0/config,target=/etc/x,readonly" in args
    assert f"type=bind,source={tmp_path}/pool-log-0/mo-data,target=/var/lib/matrixone" in args
    assert (tmp_path / "pool-log-0" / "config" / "start.sh").read_text() == "# pool-log"
    assert args[args.index("--memory") + 1] == str(1536 * 2**20)
    assert args[-4:] == ["--entrypoint", "/bin/sh", "mo:1", "/etc/x/start.sh"]


FORWARD_DROP = """-P FORWARD DROP
-A FORWARD -j DOCKER-USER
-A FORWARD -o br-037d6d3360cb -j DOCKER
-A FORWARD -i br-037d6d3360cb -o br-037d6d3360cb -j ACCEPT"""


def test_bridged_traffic_is_let_through_only_where_the_host_would_drop_it() -> None:
    assert needs_accept("mtr1", forward_rules=FORWARD_DROP, bridge_nf="1\n")
    # An engine managing iptables names its own bridge; a host not filtering bridges or
    # not dropping by default needs nothing.
    assert not needs_accept("br-037d6d3360cb", forward_rules=FORWARD_DROP, bridge_nf="1")
    assert not needs_accept("mtr1", forward_rules=FORWARD_DROP, bridge_nf="0")
    assert not needs_accept("mtr1", forward_rules="-P FORWARD ACCEPT", bridge_nf="1")
    # A rule for another bridge whose name starts the same does not count.
    assert needs_accept(
        "mtr1", forward_rules=FORWARD_DROP + "\n-A FORWARD -i mtr12 -j ACCEPT", bridge_nf="1"
    )


def test_the_rule_goes_first_in_docker_user_and_comes_out_again(monkeypatch, tmp_path: Path):
    from mochaos.tooling.runner import Result

    from trial import forwarding

    (tmp_path / "nf").write_text("1\n")
    monkeypatch.setattr(forwarding, "BRIDGE_NF", tmp_path / "nf")
    monkeypatch.setattr(forwarding.shutil, "which", lambda name: f"/usr/sbin/{name}")
    runner = RecordingRunner({"iptables -S FORWARD": Result((), 0, FORWARD_DROP)})
    lines: list[str] = []
    undo = forwarding.accept_bridge("mtr1", runner=runner, progress=lines.append)
    assert runner.commands()[-1] == "iptables -I DOCKER-USER 1 -i mtr1 -o mtr1 -j ACCEPT"
    assert "FORWARD policy DROP" in lines[0]
    undo()
    assert runner.commands()[-1] == "iptables -D DOCKER-USER -i mtr1 -o mtr1 -j ACCEPT"
    quiet = RecordingRunner({"iptables -S FORWARD": Result((), 0, "-P FORWARD ACCEPT")})
    forwarding.accept_bridge("mtr1", runner=quiet, progress=lines.append)()
    assert quiet.commands() == ["iptables -S FORWARD"]
