"""Where the model's pool pods run: kwok's fake nodes on the embedded cluster, else real
nodes with a pause image they already have (read from the nodes kubelet reports)."""

from __future__ import annotations

import pytest

from mochaos.errors import InfraError
from mochaos.operator.targets.model import pod_image_of

# As kubelet reports a kind node's images (status.images): digests and tags, pause among them.
KIND_NODE = {
    "metadata": {"name": "mochaos-control-plane", "labels": {"kubernetes.io/os": "linux"}},
    "status": {
        "images": [
            {"names": ["registry.k8s.io/etcd:3.6.8-0"]},
            {"names": ["registry.k8s.io/pause@sha256:0123", "registry.k8s.io/pause:3.10.1"]},
            {"names": ["docker.io/kindest/kindnetd:v20250512-df8de77b"]},
        ]
    },
}
KWOK_NODE = {"metadata": {"name": "kwok-node-0", "labels": {"type": "kwok"}}, "status": {}}


def test_kwok_nodes_take_the_pods_and_run_nothing() -> None:
    assert pod_image_of([KWOK_NODE], cluster="mc") is None
    assert pod_image_of([KIND_NODE, KWOK_NODE], cluster="mc") is None


def test_real_nodes_run_the_pause_image_they_have_by_its_tag() -> None:
    assert pod_image_of([KIND_NODE], cluster="mc") == "registry.k8s.io/pause:3.10.1"


def test_real_nodes_without_a_pause_image_are_named() -> None:
    bare = {"metadata": {"name": "n"}, "status": {"images": [{"names": ["busybox:1"]}]}}
    with pytest.raises(InfraError, match="no node of cluster mc reports a pause image"):
        pod_image_of([bare, {"metadata": {"name": "m"}, "status": {}}], cluster="mc")
