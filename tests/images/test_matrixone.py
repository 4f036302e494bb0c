"""The MatrixOne image's recipe: its commands, its cache key, its refusals, pull or build.

No Docker and no Go build here: the engine is a recorded CLI, the toolchain a fixed one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos.errors import UsageError
from mochaos.images import matrixone
from mochaos.images.archive import ImageConfig, write_archive
from mochaos.images.gomodule import GoToolchain, ModuleSource
from mochaos.images.matrixone import MatrixOneImage, refusal, source_refusal
from mochaos.images.recipe import RECIPE_LABEL
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.runner import RecordingRunner, Result

GO = GoToolchain("/usr/local/go/bin/go", "go1.26.8", "amd64")
SOURCE = ModuleSource(
    matrixone.MODULE,
    "v1.2.3",
    Path("/mod/matrixone@v1.2.3"),
    "f01f07a2a75a4ecd5ae27130a633f13651aa1751",
    "2024-09-10T13:35:05Z",
)
REF = "matrixorigin/matrixone:1.2.3"


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path / "cache"))


def test_libmo_then_mo_service_with_the_makefiles_version_flags() -> None:
    make, build = MatrixOneImage("1.2.3", GO).commands(SOURCE, Path("/w"), Path("/w/mo-service"))
    assert make == ["make", "-C", "/w/cgo"]
    env = dict(a.split("=", 1) for a in build[1 : build.index(GO.path)])
    assert env["CGO_ENABLED"] == "1"
    assert env["CGO_CFLAGS"] == "-I/w/cgo"
    assert env["CGO_LDFLAGS"] == "-L/w/cgo -lm -lmo"
    assert env["GOFLAGS"] == "-mod=readonly"
    assert "github.com/matrixorigin" in env["GONOSUMDB"].split(",")
    go = build[build.index(GO.path) :]
    assert go[:4] == [GO.path, "-C", "/mod/matrixone@v1.2.3", "build"]
    assert go[-3:] == ["-o", "/w/mo-service", "./cmd/mo-service"]
    flags = go[go.index("-ldflags") + 1]
    prefix = "github.com/matrixorigin/matrixone/pkg/version"
    for expected in (
        f"-X '{prefix}.Version=v1.2.3'",
        f"-X '{prefix}.CommitID=f01f07a'",
        f"-X '{prefix}.GoVersion=go version go1.26.8 linux/amd64'",
        f"-X '{prefix}.BuildTime=2024-09-10T13:35:05Z'",
    ):
        assert expected in flags


def test_the_image_is_upstreams_layout_labelled_with_the_recipe() -> None:
    config = MatrixOneImage("1.2.3", GO).config("k1")
    assert config.entrypoint == (
        "/mo-service",
        "-debug-http=:12345",
        "-launch",
        "/etc/quickstart/launch.toml",
    )
    assert config.ports == (6001,)
    assert config.labels[RECIPE_LABEL] == "k1"
    assert matrixone.BASE.packages == ("bind9-dnsutils", "ca-certificates", "curl")


def test_the_key_follows_the_version_the_toolchain_and_the_base_not_the_cache_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = MatrixOneImage("1.2.3", GO).entry().key
    assert MatrixOneImage("1.2.0", GO).entry().key != key
    assert MatrixOneImage("1.2.3", GoToolchain(GO.path, "go1.26.9", "amd64")).entry().key != key
    assert MatrixOneImage("1.2.3", GoToolchain(GO.path, "go1.26.8", "arm64")).entry().key != key
    monkeypatch.setenv("MOCHAOS_DEBIAN_MIRROR", "http://mirror.example/debian")
    assert MatrixOneImage("1.2.3", GO).entry().key != key
    monkeypatch.delenv("MOCHAOS_DEBIAN_MIRROR")
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path / "elsewhere"))
    assert MatrixOneImage("1.2.3", GO).entry().key == key


@pytest.mark.parametrize("version", ["1.2.3", "1.2.0", "1.1.2"])
def test_1x_releases_are_built(version: str) -> None:
    assert refusal(version) is None


def test_later_and_unreleased_versions_are_refused_in_one_line_saying_why() -> None:
    why = refusal("2.1.0")
    assert why is not None and "not a Go module version" in why and "thirdparties" in why
    for tag in ("nightly-1a2b3c", "1.2", "v1.2.3"):
        assert "is not a MatrixOne release (x.y.z)" in (refusal(tag) or "")
    with pytest.raises(UsageError) as info:
        matrixone.build_archive("3.0.0", progress=lambda _: None)
    assert str(info.value).startswith("cannot build matrixorigin/matrixone:3.0.0: MatrixOne 3.0.0")
    assert "\n" not in str(info.value)


def test_a_source_tree_that_needs_more_than_cgo_is_refused(tmp_path: Path) -> None:
    tree = tmp_path / "src"
    for rel in ("cgo/Makefile", "cmd/mo-service/main.go", "etc/quickstart/launch.toml"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("")
    source = ModuleSource(matrixone.MODULE, "v1.9.0", tree, "", "")
    assert source_refusal(source) is None
    (tree / "thirdparties").mkdir()
    assert "thirdparties" in (source_refusal(source) or "")
    (tree / "thirdparties").rmdir()
    (tree / "cgo" / "Makefile").unlink()
    assert source_refusal(source) == f"{matrixone.MODULE}@v1.9.0 has no cgo/Makefile"


# -- pull or build ------------------------------------------------------------------------------


def _docker(script: dict) -> tuple[DockerCli, RecordingRunner]:
    runner = RecordingRunner(script)
    return DockerCli(path="docker", runner=runner), runner


INSPECT = f"docker image inspect --format {{{{json .Config.Labels}}}} {REF}"
ABSENT = Result((), 1, "", f"Error: No such image: {REF}")


@pytest.fixture()
def built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """build_archive replaced by a tiny archive; records each build."""
    monkeypatch.setattr(matrixone, "recipe", lambda version, **_: MatrixOneImage(version, GO))
    builds: list[str] = []

    def fake_build(version: str, **_: object) -> Path:
        builds.append(version)
        out = tmp_path / "image.tar"
        write_archive(
            out,
            ref=matrixone.image_ref(version),
            layers=[],
            config=ImageConfig(entrypoint=("/x",)),
            architecture="amd64",
            created="2024-09-10T13:35:05Z",
        )
        return out

    monkeypatch.setattr(matrixone, "build_archive", fake_build)
    return builds


def test_an_image_the_engine_has_from_elsewhere_is_used_as_it_is(built: list[str]) -> None:
    docker, runner = _docker({INSPECT: '{"org.opencontainers.image.version": "1.2.3"}'})
    assert matrixone.ensure_image("1.2.3", docker, progress=lambda _: None) == REF
    assert runner.commands() == [INSPECT]
    assert built == []


def test_a_pullable_image_is_pulled_and_not_built(built: list[str]) -> None:
    docker, runner = _docker({INSPECT: ABSENT})
    assert matrixone.ensure_image("1.2.3", docker, progress=lambda _: None) == REF
    assert runner.commands() == [INSPECT, f"docker pull {REF}"]
    assert built == []


def test_without_a_registry_the_image_is_built_and_loaded(built: list[str]) -> None:
    offline = Result(
        (),
        1,
        "",
        'Error response from daemon: Get "https://registry-1.docker.io'
        '/v2/": dial tcp: lookup registry-1.docker.io: no such host',
    )
    docker, runner = _docker({INSPECT: ABSENT, "docker pull": offline})
    lines: list[str] = []
    assert matrixone.ensure_image("1.2.3", docker, progress=lines.append) == REF
    assert built == ["1.2.3"]
    assert runner.commands()[-1].startswith("docker load --input ")
    assert any("not pulled" in line and "building it from source" in line for line in lines)


def test_an_image_of_the_current_recipe_is_kept_and_one_of_an_older_recipe_replaced(
    built: list[str],
) -> None:
    key = MatrixOneImage("1.2.3", GO).entry().key
    docker, runner = _docker({INSPECT: f'{{"{RECIPE_LABEL}": "{key}"}}'})
    matrixone.ensure_image("1.2.3", docker, progress=lambda _: None)
    assert built == [] and runner.commands() == [INSPECT]
    docker, runner = _docker({INSPECT: f'{{"{RECIPE_LABEL}": "0ld"}}'})
    matrixone.ensure_image("1.2.3", docker, progress=lambda _: None)
    assert built == ["1.2.3"]
    assert "docker pull" not in " ".join(runner.commands())
