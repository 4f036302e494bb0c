"""The kind Cluster config mo-chaos generates, and the node image it pins (for the kind
release :data:`mochaos.images.go_tools.KIND_VERSION`).

One control-plane node (optionally workers) running the pinned node image, with
the apiserver audit log turned on: the audit policy and the log directory are
mounted from the host into the node, and a kubeadm ClusterConfiguration patch
mounts them into the apiserver's static pod and passes the audit flags.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from mochaos.errors import UsageError
from mochaos.tooling.apply import MANIFESTS

NODE_IMAGE = (
    "kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed"
)
"""Kubernetes 1.36.4 node image published with kind v0.33.0 (whose default is v1.37.0).

Not pulled here (no registry access): the digest is the one public projects pin
next to kind v0.33.0; kind v0.33.0's own default is
``kindest/node:v1.37.0@sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5``.
"""

# Inside the node container: where the policy is mounted and where the log is written.
NODE_POLICY_DIR = "/etc/kubernetes/policies"
NODE_LOG_DIR = "/var/log/kubernetes/audit"
AUDIT_LOG_NAME = "audit.log"
AUDIT_LOG_MAX_MB = 500

AUDIT_POLICY = MANIFESTS / "kind" / "audit-policy.yaml"
SINGLE_CONTROL_PLANE = {"leader-elect": "false"}
"""kube-controller-manager's and kube-scheduler's flags on our single control-plane node."""


@dataclass(frozen=True, slots=True)
class PortMapping:
    """A node port published on the host (kind ``extraPortMappings``)."""

    container_port: int
    host_port: int
    listen_address: str = "127.0.0.1"
    protocol: str = "TCP"


def node_kubernetes_version(node_image: str) -> tuple[int, int, int]:
    """The Kubernetes version in a node image tag (``kindest/node:v1.36.4@sha256:…``, or the
    offline image's ``mochaos.local/kind-node:v1.36.3-<recipe>``)."""
    m = re.search(r":v(\d+)\.(\d+)\.(\d+)(?:[-@]|$)", node_image)
    if m is None:
        raise UsageError(
            f"cannot tell the Kubernetes version of node image {node_image!r}",
            hint="use an image tagged vX.Y.Z, e.g. " + NODE_IMAGE,
        )
    return int(m[1]), int(m[2]), int(m[3])


def _audit_patch(kube_version: tuple[int, int, int]) -> str:
    """The kubeadm ClusterConfiguration patch: the audit log on, no leader elections.

    kind v0.33 generates kubeadm v1beta4 for Kubernetes >= 1.36, where
    ``extraArgs`` is a list of name/value pairs, and v1beta3 (a plain map)
    before that; the patch names its apiVersion so kind applies it as written.
    """
    args = {
        "audit-policy-file": f"{NODE_POLICY_DIR}/audit-policy.yaml",
        "audit-log-path": f"{NODE_LOG_DIR}/{AUDIT_LOG_NAME}",
        "audit-log-maxsize": str(AUDIT_LOG_MAX_MB),
        "audit-log-maxbackup": "1",
    }
    v1beta4 = kube_version >= (1, 36, 0)
    volumes = [
        {
            "name": "audit-policies",
            "hostPath": NODE_POLICY_DIR,
            "mountPath": NODE_POLICY_DIR,
            "readOnly": True,
            "pathType": "DirectoryOrCreate",
        },
        {
            "name": "audit-logs",
            "hostPath": NODE_LOG_DIR,
            "mountPath": NODE_LOG_DIR,
            "readOnly": False,
            "pathType": "DirectoryOrCreate",
        },
    ]

    def extra(flags: dict[str, str]) -> Any:
        return [{"name": k, "value": v} for k, v in flags.items()] if v1beta4 else flags

    patch = {
        "kind": "ClusterConfiguration",
        "apiVersion": "kubeadm.k8s.io/v1beta4" if v1beta4 else "kubeadm.k8s.io/v1beta3",
        "apiServer": {"extraArgs": extra(args), "extraVolumes": volumes},
        # One control plane: nothing to elect. With leader election on, a loaded machine's
        # slow apiserver makes them miss their renew deadline and exit (seen: restarts of
        # both mid-scenario, a new namespace without its ServiceAccount for a minute).
        "controllerManager": {"extraArgs": extra(SINGLE_CONTROL_PLANE)},
        "scheduler": {"extraArgs": extra(SINGLE_CONTROL_PLANE)},
    }
    return yaml.safe_dump(patch, sort_keys=False)


def kind_config(
    *,
    name: str,
    node_image: str,
    audit_dir: Path,
    workers: int = 0,
    port_mappings: Sequence[PortMapping] = (),
    containerd_settings: Mapping[str, Any] | None = None,
    kubelet_settings: Mapping[str, Any] | None = None,
    containerd_patches: Sequence[str] = (),
) -> dict[str, Any]:
    """The kind Cluster config (kind.x-k8s.io/v1alpha4) for one mo-chaos cluster.

    ``audit_dir`` on the host holds ``policy/audit-policy.yaml`` and receives
    ``log/audit.log``; both are mounted into the control-plane node and from
    there into the apiserver's static pod. ``containerd_settings`` go into the nodes'
    CRI plugin configuration and ``kubelet_settings`` into every kubelet's
    KubeletConfiguration (the host workarounds, see :mod:`mochaos.cluster.kind.host_facts`);
    ``containerd_patches`` are further containerd config patches (TOML), e.g. the registry
    mirrors' (:func:`mochaos.cluster.kind.image_registry.config_path_patch`).
    """
    control_plane: dict[str, Any] = {
        "role": "control-plane",
        "image": node_image,
        "extraMounts": [
            {
                "hostPath": str(audit_dir / "policy"),
                "containerPath": NODE_POLICY_DIR,
                "readOnly": True,
            },
            {"hostPath": str(audit_dir / "log"), "containerPath": NODE_LOG_DIR},
        ],
        "kubeadmConfigPatches": [_audit_patch(node_kubernetes_version(node_image))],
    }
    if kubelet_settings:
        patch = {"kind": "KubeletConfiguration",
                 "apiVersion": "kubelet.config.k8s.io/v1beta1", **kubelet_settings}  # fmt: skip
        control_plane["kubeadmConfigPatches"].append(yaml.safe_dump(patch, sort_keys=False))
    if port_mappings:
        control_plane["extraPortMappings"] = [
            {
                "containerPort": p.container_port,
                "hostPort": p.host_port,
                "listenAddress": p.listen_address,
                "protocol": p.protocol,
            }
            for p in port_mappings
        ]
    workers_ = [{"role": "worker", "image": node_image} for _ in range(workers)]
    if kubelet_settings:
        for worker in workers_:
            worker["kubeadmConfigPatches"] = control_plane["kubeadmConfigPatches"][1:]
    config: dict[str, Any] = {
        "kind": "Cluster",
        "apiVersion": "kind.x-k8s.io/v1alpha4",
        "name": name,
        "nodes": [control_plane, *workers_],
    }
    patches = [_cri_patch(containerd_settings)] if containerd_settings else []
    patches += containerd_patches
    if patches:
        config["containerdConfigPatches"] = patches
    return config


def _cri_patch(settings: Mapping[str, Any]) -> str:
    """A containerd config patch (TOML) setting ``settings`` in the CRI plugin's table."""
    lines = ['[plugins."io.containerd.grpc.v1.cri"]']
    for key, value in settings.items():
        rendered = str(value).lower() if isinstance(value, bool) else json.dumps(value)
        lines.append(f"  {key} = {rendered}")
    return "\n".join(lines) + "\n"
