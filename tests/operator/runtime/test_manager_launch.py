"""The real manager's launch: its configuration directory, kubeconfig, readiness."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from mochaos.kube import Cluster
from mochaos.kubeconfig import write_single_context
from mochaos.operator.runtime.manager_launch import ManagerLaunch, ready_in_log, write_config_dir


def test_the_config_dir_holds_one_file_per_field(tmp_path: Path):
    cfg = write_config_dir(tmp_path / "cfg")
    assert sorted(p.name for p in cfg.iterdir()) == ["featureGates", "onlyWatchReleasedNS"]
    assert yaml.safe_load((cfg / "featureGates").read_text()) == {"cnLabel": True, "cnPool": True}
    assert (cfg / "onlyWatchReleasedNS").read_text().strip() == "true"


def _kubeconfig(path: Path) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "contexts": [{"name": "a", "context": {"cluster": "ca", "user": "ua"}},
                     {"name": "b", "context": {"cluster": "cb", "user": "ub"}}],
        "clusters": [{"name": "ca", "cluster": {"server": "https://a",
                                                "certificate-authority": "ca.crt"}},
                     {"name": "cb", "cluster": {"server": "https://b"}}],
        "users": [{"name": "ua", "user": {"token": "x"}}, {"name": "ub", "user": {"token": "y"}}],
    }))  # fmt: skip
    return path


def test_a_started_process_gets_only_the_runs_context(tmp_path: Path):
    out = write_single_context(_kubeconfig(tmp_path / "kc"), "b", tmp_path / "one")
    data = yaml.safe_load(out.read_text())
    assert [c["name"] for c in data["contexts"]] == ["b"]
    assert [c["name"] for c in data["clusters"]] == ["cb"]
    assert [u["name"] for u in data["users"]] == ["ub"]
    assert data["current-context"] == "b"


def test_relative_certificate_paths_stay_valid_in_the_copy(tmp_path: Path):
    out = write_single_context(_kubeconfig(tmp_path / "kc"), None, tmp_path / "sub" / "one")
    ca = yaml.safe_load(out.read_text())["clusters"][0]["cluster"]["certificate-authority"]
    assert ca == str(tmp_path / "ca.crt")


def test_the_launch_watches_one_namespace_without_webhooks(tmp_path: Path):
    cluster = Cluster("c", "local", _kubeconfig(tmp_path / "kc"), "v1", context="a")
    launch = ManagerLaunch(binary=Path("/bin/manager"), namespace="ns1", workdir=tmp_path / "w",
                           hosts_file=None)  # fmt: skip
    argv, env = launch.prepare(cluster)
    assert argv[0] == "/bin/manager"
    assert any(a.startswith("--operator-cfg-directory=") for a in argv)
    assert f"--metrics-bind-address=127.0.0.1:{launch.metrics_port}" in argv
    assert env["POD_NAMESPACE"] == "ns1" and env["ENABLE_WEBHOOKS"] == "false"
    assert yaml.safe_load(Path(env["KUBECONFIG"]).read_text())["current-context"] == "a"


def _started(controller: str) -> str:
    return json.dumps({"level": "info", "msg": "Starting workers", "controller": controller})


def test_ready_once_every_claim_controller_started_its_workers():
    lines = [_started("cn-claim-manager"), _started("cn-claimset-manager")]
    assert not ready_in_log(lines)
    assert ready_in_log([*lines, "not json", _started("cn-pool-manager")])
