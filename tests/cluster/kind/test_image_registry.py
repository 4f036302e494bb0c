"""Pulling through a registry, without Docker: the option's values, where a reference lives
in a registry, the containerd files and config the nodes get, and the run's refusals."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from mochaos.cluster.kind.image_registry import (
    NODE_HOSTS_DIR,
    ImagePath,
    config_path_patch,
    hosts_toml,
    serves,
)
from mochaos.cluster.kind.kind_config import kind_config
from mochaos.config import REGISTRY_LOCAL, parse_registry
from mochaos.errors import InfraError


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("", None),
        ("local", REGISTRY_LOCAL),
        ("registry.corp:5000", "http://registry.corp:5000"),
        ("https://mirror.corp/", "https://mirror.corp"),
        ("http://10.0.0.5:5000", "http://10.0.0.5:5000"),
    ],
)
def test_the_option_is_local_or_an_endpoint(value: str, parsed: str | None) -> None:
    assert parse_registry(value) == parsed


@pytest.mark.parametrize("value", ["ftp://host:21", "host:port", "a b", "http://"])
def test_anything_else_is_refused_saying_what_to_pass(value: str) -> None:
    with pytest.raises(ValueError, match="neither 'local' nor a registry address"):
        parse_registry(value)


@pytest.mark.parametrize(
    ("ref", "where"),
    [
        ("matrixorigin/matrixone-operator:2301e3b",
         ("docker.io", "matrixorigin/matrixone-operator", "2301e3b")),
        ("busybox", ("docker.io", "library/busybox", "latest")),
        ("ghcr.io/org/app:1", ("ghcr.io", "org/app", "1")),
        ("localhost:5000/app:2", ("localhost:5000", "app", "2")),
        ("mochaos/registry:v3.1.2", ("docker.io", "mochaos/registry", "v3.1.2")),
        ("mochaos.local/matrixone-operator:2301e3b54137",
         ("mochaos.local", "matrixone-operator", "2301e3b54137")),
    ],
)  # fmt: skip
def test_a_reference_lives_where_dockers_defaults_put_it(ref: str, where: tuple) -> None:
    image = ImagePath.of(ref)
    assert (image.registry, image.path, image.tag) == where


def test_hosts_toml_pulls_through_the_endpoint_then_docker_hub() -> None:
    text = hosts_toml("docker.io", "http://172.18.0.3:5000")
    assert text.splitlines()[0] == 'server = "https://registry-1.docker.io"'
    assert '[host."http://172.18.0.3:5000"]' in text
    assert 'capabilities = ["pull", "resolve"]' in text


def test_the_cluster_config_makes_containerd_read_the_hosts_dir(tmp_path: Path) -> None:
    plain = kind_config(name="m", node_image="img:v1.36.3", audit_dir=tmp_path)
    assert "containerdConfigPatches" not in plain
    mirrored = kind_config(name="m", node_image="img:v1.36.3", audit_dir=tmp_path,
                           containerd_settings={"restrict_oom_score_adj": True},
                           containerd_patches=[config_path_patch()])  # fmt: skip
    first, second = mirrored["containerdConfigPatches"]
    assert "restrict_oom_score_adj = true" in first
    assert second == (
        f'[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "{NODE_HOSTS_DIR}"\n'
    )


class _Registry(http.server.BaseHTTPRequestHandler):
    """Serves one manifest, as a registry's HEAD does (200 or 404), and 401 for /private."""

    def do_HEAD(self) -> None:
        if self.path.startswith("/v2/private/"):
            self.send_response(401)
        elif self.path == "/v2/library/busybox/manifests/1":
            self.send_response(200)
        else:
            self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def registry_endpoint():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_users_registry_is_asked_for_each_manifest(registry_endpoint: str) -> None:
    assert serves(registry_endpoint, "busybox:1")
    assert not serves(registry_endpoint, "busybox:2")
    with pytest.raises(InfraError, match="answered 401"):
        serves(registry_endpoint, "private/app:1")


def test_a_registry_that_cannot_be_reached_is_infrastructure() -> None:
    with pytest.raises(InfraError, match="cannot be reached"):
        serves("http://127.0.0.1:9", "busybox:1", timeout=2)
