"""The offline node image's recipe: what kubeadm asks for, the CNI, the cache key."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from mochaos.errors import BuildError
from mochaos.images import node_image, preloaded
from mochaos.images.node_image import CNI_CONFIG, KubeadmImages, recipe_key, sandbox_image

KUBEADM_1_36 = """registry.k8s.io/kube-apiserver:v1.36.3
registry.k8s.io/kube-controller-manager:v1.36.3
registry.k8s.io/kube-scheduler:v1.36.3
registry.k8s.io/kube-proxy:v1.36.3
registry.k8s.io/coredns/coredns:v1.14.2
registry.k8s.io/pause:3.10.2
registry.k8s.io/etcd:3.6.8-0
"""


def test_kubeadms_list_gives_each_components_reference_and_the_etcd_release() -> None:
    wanted = KubeadmImages.parse(KUBEADM_1_36)
    assert wanted.refs["coredns"] == "registry.k8s.io/coredns/coredns:v1.14.2"
    assert wanted.tag("pause") == "3.10.2"
    assert wanted.etcd_version() == "v3.6.8"


def test_a_list_without_etcd_is_refused() -> None:
    with pytest.raises(BuildError, match="no image for etcd"):
        KubeadmImages.parse(KUBEADM_1_36.replace("registry.k8s.io/etcd:3.6.8-0", ""))


def test_the_sandbox_image_is_read_from_kinds_containerd_config() -> None:
    config = (
        '[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "registry.k8s.io/pause:3.10"\n'
    )
    assert sandbox_image(config) == "registry.k8s.io/pause:3.10"
    with pytest.raises(BuildError):
        sandbox_image("version = 2\n")


def test_the_cni_gives_the_single_nodes_range_with_masquerade() -> None:
    (ptp, portmap) = CNI_CONFIG["plugins"]
    assert ptp["type"] == "ptp" and ptp["ipMasq"] is True
    assert ptp["ipam"]["ranges"] == [[{"subnet": node_image.POD_SUBNET}]]
    assert portmap["type"] == "portmap"


def test_the_recipe_key_follows_kinds_files(tmp_path: Path) -> None:
    files = tmp_path / "files"
    (files / "etc").mkdir(parents=True)
    (files / "etc" / "crictl.yaml").write_text("runtime-endpoint: a\n")
    first = recipe_key(files)
    assert recipe_key(files) == first
    (files / "etc" / "crictl.yaml").write_text("runtime-endpoint: b\n")
    assert recipe_key(files) != first


@pytest.mark.skipif(shutil.which("sh") is None, reason="no POSIX shell")
def test_the_shell_scripts_put_in_images_parse() -> None:
    for script in (node_image.KUBEADM_WAIT, preloaded.IPTABLES_WRAPPER):
        subprocess.run(["sh", "-n"], input=script, text=True, check=True)


def test_debian_versions_become_image_tags() -> None:
    assert preloaded.tag_safe("1:1.37.0-6+b9") == "1.37.0-6-b9"
