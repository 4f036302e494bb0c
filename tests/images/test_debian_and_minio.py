"""The Debian base (debootstrap command, key, refusals) and the MinIO image's recipe."""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos.errors import UsageError
from mochaos.images import debian
from mochaos.images import minio as minio_image
from mochaos.images.debian import DebianBase
from mochaos.images.gomodule import GoToolchain, ModuleSource
from mochaos.images.matrixone import BASE, MatrixOneImage
from mochaos.images.recipe import RECIPE_LABEL, Steps
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.runner import RecordingRunner, Result

GO = GoToolchain("/go/bin/go", "go1.26.8", "amd64")


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(debian.MIRROR_ENV, raising=False)


def test_debootstrap_makes_a_minbase_with_the_packages_from_the_mirror(monkeypatch) -> None:
    base = DebianBase("bookworm", ("curl", "bind9-dnsutils"))
    assert base.debootstrap_argv(Path("/t")) == [
        "debootstrap",
        "--variant=minbase",
        "--include=bind9-dnsutils,curl",
        "bookworm",
        "/t",
        "http://deb.debian.org/debian",
    ]
    monkeypatch.setenv(debian.MIRROR_ENV, "http://mirror.example/debian")
    assert base.debootstrap_argv(Path("/t"))[-1] == "http://mirror.example/debian"


def test_the_base_layer_is_shared_by_the_matrixone_and_minio_images() -> None:
    assert (
        minio_image.MinioImage(GO).inputs()["base"] == MatrixOneImage("1.2.3", GO).inputs()["base"]
    )
    assert BASE.entry() == DebianBase("bookworm", tuple(reversed(BASE.packages))).entry()
    assert DebianBase("trixie", BASE.packages).entry() != BASE.entry()


def _steps() -> Steps:
    return Steps("building x", 1, progress=lambda _: None, log_path=Path("/x.log"))


def test_without_root_or_debootstrap_the_base_is_refused_in_one_line(monkeypatch) -> None:
    monkeypatch.setattr(debian.shutil, "which", lambda name: None)
    with pytest.raises(UsageError, match=r"^debootstrap not found: it makes the Debian base of"):
        BASE.layer(_steps(), needed_by="img:1")
    monkeypatch.setattr(debian.shutil, "which", lambda name: "/usr/sbin/debootstrap")
    monkeypatch.setattr(debian.os, "geteuid", lambda: 1000)
    with pytest.raises(UsageError) as info:
        BASE.layer(_steps(), needed_by="img:1")
    assert str(info.value).startswith("debootstrap needs root to make the Debian base of img:1")
    assert not BASE.entry().complete()


# -- MinIO ---------------------------------------------------------------------------------------

SOURCE = ModuleSource(
    minio_image.MODULE, minio_image.VERSION, Path("/mod/minio"), "", "2026-02-12T20:18:48Z"
)


def test_minio_and_mc_are_static_builds_from_the_pinned_module() -> None:
    build_minio, build_mc = minio_image.MinioImage(GO).commands(SOURCE, Path("/out"))
    for argv in (build_minio, build_mc):
        assert "CGO_ENABLED=0" in argv and "GOFLAGS=-mod=readonly" in argv
        assert argv[argv.index(GO.path) + 1 : argv.index(GO.path) + 4] == [
            "-C",
            "/mod/minio",
            "build",
        ]
    assert build_minio[-3:] == ["-o", "/out/minio", "."]
    assert build_mc[-3:] == ["-o", "/out/mc", "github.com/minio/mc"]
    flags = build_minio[build_minio.index("-ldflags") + 1]
    assert "-X github.com/minio/minio/cmd.Version=2026-02-12T20:18:48Z" in flags
    assert "-X github.com/minio/minio/cmd.CommitID=7aac2a2c5b7c" in flags


def test_minio_runs_server_data_like_upstreams_image() -> None:
    config = minio_image.MinioImage(GO).config("k")
    assert config.entrypoint == ("/usr/bin/minio",)
    assert config.cmd == ("server", "/data")
    assert config.labels[RECIPE_LABEL] == "k"


def _docker(script: dict) -> tuple[DockerCli, RecordingRunner]:
    runner = RecordingRunner(script)
    return DockerCli(path="docker", runner=runner), runner


def _inspect(ref: str) -> str:
    return f"docker image inspect --format {{{{json .Config.Labels}}}} {ref}"


ABSENT = Result((), 1, "", "Error: No such image")


def test_upstreams_minio_is_used_when_the_engine_has_or_pulls_it() -> None:
    docker, runner = _docker({_inspect(minio_image.UPSTREAM_IMAGE): "{}"})
    assert minio_image.ensure_image(docker) == minio_image.UPSTREAM_IMAGE
    docker, runner = _docker({_inspect(minio_image.UPSTREAM_IMAGE): ABSENT})
    assert minio_image.ensure_image(docker) == minio_image.UPSTREAM_IMAGE
    assert runner.commands()[-1] == f"docker pull {minio_image.UPSTREAM_IMAGE}"


def test_offline_our_minio_is_used_once_loaded(monkeypatch, tmp_path: Path) -> None:
    image = minio_image.MinioImage(GO)
    monkeypatch.setattr(minio_image, "recipe", lambda: image)
    key = image.entry().key
    docker, runner = _docker(
        {
            _inspect(minio_image.UPSTREAM_IMAGE): ABSENT,
            "docker pull": Result((), 1, "", "no such host"),
            _inspect(image.ref): f'{{"{RECIPE_LABEL}": "{key}"}}',
        }
    )
    lines: list[str] = []
    assert minio_image.ensure_image(docker, progress=lines.append) == image.ref
    assert "using MinIO built from source" in lines[0]
    assert not any(c.startswith("docker load") for c in runner.commands())
