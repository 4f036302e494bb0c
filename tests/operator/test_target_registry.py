"""The operator target registry: every bad --operator value is one line, before any test."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mochaos.errors import UsageError
from mochaos.operator import REGISTRY, parse_target, usage


def test_every_scheme_is_listed_in_the_usage_line():
    assert all(s.usage in usage() for s in REGISTRY.values())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bogus", "unknown operator target 'bogus'"),
        ("model:nope", "unknown model profile 'nope'"),
        ("binary:", "binary: target needs a path"),
        ("binary:/no/such/manager", "is not an executable file"),
        ("image:", "image: target needs a reference"),
        ("installed:x", "installed takes no value"),
        ("source:/no/such/checkout", "is not a directory"),
    ],
)
def test_bad_targets_are_usage_errors(spec: str, message: str):
    with pytest.raises(UsageError, match=message):
        parse_target(spec, {})


def _manager(tmp_path: Path) -> Path:
    exe = tmp_path / "manager"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_the_time_scale_is_refused_for_a_real_manager(tmp_path: Path):
    options = {"time_scale": 0.2, "operator_crds": tmp_path}
    with pytest.raises(UsageError, match="intervals are compiled in"):
        parse_target(f"binary:{_manager(tmp_path)}", options)


def test_the_model_takes_the_time_scale():
    target = parse_target("model:upstream", {"time_scale": 0.2})
    assert target.time_scaled and target.spec == "model:upstream"


def test_a_binary_needs_the_operators_crds(tmp_path: Path):
    with pytest.raises(UsageError, match="--operator-crds"):
        parse_target(f"binary:{_manager(tmp_path)}", {})


def test_real_managers_run_on_the_local_cluster_only(tmp_path: Path):
    options = {"operator_crds": tmp_path, "cluster": "kind"}
    with pytest.raises(UsageError, match="run on the local cluster"):
        parse_target(f"binary:{_manager(tmp_path)}", options)


def test_a_binary_target_names_its_build_by_digest(tmp_path: Path):
    target = parse_target(f"binary:{_manager(tmp_path)}", {"operator_crds": tmp_path})
    assert target.version.startswith("manager@sha256:")
    assert target.crds == "operator" and not target.time_scaled


IMAGE = "mochaos-test/matrixone-operator:2301e3b"


def _docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """A ``docker`` first on PATH that answers ``docker version`` with ``script``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(f"#!/bin/sh\n{script}\n")
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "state"))


def test_an_image_is_installed_with_its_chart_on_kind_and_existing_clusters():
    from mochaos.operator.targets.chart import ImageTarget

    for cluster in ("kind", "existing"):
        assert isinstance(parse_target(f"image:{IMAGE}", {"cluster": cluster}), ImageTarget)


def test_an_image_runs_as_containers_on_the_local_cluster(tmp_path, monkeypatch):
    from mochaos.operator.targets.container import ContainerTarget

    _docker(tmp_path, monkeypatch, "echo 20.10.24")
    target = parse_target(f"image:{IMAGE}", {"cluster": "local", "operator_crds": tmp_path})
    assert isinstance(target, ContainerTarget)
    assert (target.spec, target.version, target.entrypoint) == (f"image:{IMAGE}", "2301e3b",
                                                                "/manager")  # fmt: skip
    assert target.images == () and target.crds == "operator" and not target.time_scaled
    options = {"operator_crds": tmp_path, "operator_entrypoint": "/bin/manager"}
    assert parse_target(f"image:{IMAGE}", options).entrypoint == "/bin/manager"


def test_an_image_on_the_local_cluster_needs_the_operators_crds(tmp_path, monkeypatch):
    _docker(tmp_path, monkeypatch, "echo 20.10.24")
    with pytest.raises(UsageError) as info:
        parse_target(f"image:{IMAGE}", {"cluster": "local"})
    assert str(info.value) == (
        f"image:{IMAGE} on the local cluster needs the operator's CRDs (an image carries none): "
        "pass --operator-crds <checkout or its deploy/crds directory>"
    )


def test_an_image_on_the_local_cluster_without_a_docker_engine_is_one_line(tmp_path, monkeypatch):
    _docker(tmp_path, monkeypatch, "echo 'Cannot connect to the Docker daemon at "
            "unix:///var/run/docker.sock. Is the docker daemon running?' >&2; exit 1")  # fmt: skip
    with pytest.raises(UsageError) as info:
        parse_target(f"image:{IMAGE}", {"operator_crds": tmp_path})
    message = str(info.value)
    assert message.startswith(
        f"image:{IMAGE} on the local cluster runs the image with Docker: "
        "no Docker engine reachable (Cannot connect to the Docker daemon"
    )
    assert message.endswith("or run its manager as --operator=binary:<path>")
    assert "\n" not in message


def test_an_image_on_the_local_cluster_refuses_the_time_scale(tmp_path, monkeypatch):
    _docker(tmp_path, monkeypatch, "echo 20.10.24")
    with pytest.raises(UsageError, match="intervals are compiled in"):
        parse_target(f"image:{IMAGE}", {"operator_crds": tmp_path, "time_scale": 0.2})
