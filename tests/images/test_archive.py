"""Image archives written without an engine: docker save's layout, and a real engine loading one.

The engine test needs a reachable Docker daemon (``DOCKER_HOST`` or the default socket)
and skips, saying so, when there is none.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import tarfile
import uuid
from pathlib import Path

from mochaos.images.archive import (
    ImageConfig,
    Layer,
    load_archive,
    read_manifest,
    tar_directory,
    write_archive,
)
from mochaos.tooling.runner import RecordingRunner, SubprocessRunner

from support.docker_skip import docker_or_skip

CONFIG = ImageConfig(
    entrypoint=("/bin/tool", "-x"),
    cmd=("serve",),
    ports=(6001,),
    labels={"io.mochaos.recipe": "k1"},
)


def _layer(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    tree = tmp_path / name
    for rel, text in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    return tar_directory(
        tree, tmp_path / f"{name}.tar", runner=SubprocessRunner(progress=None), root_owned=True
    )


def test_tar_of_a_directory_keeps_owners_numeric_and_leaves_out_what_it_is_told() -> None:
    runner = RecordingRunner()
    tar_directory(Path("/r"), Path("/o/l.tar"), runner=runner, exclude=("./dev/*",))
    assert runner.commands() == [
        "tar --create --file /o/l.tar --directory /r --numeric-owner --sort=name "
        "--exclude=./dev/* ."
    ]


def test_the_archive_names_its_layers_by_digest_and_its_config_holds_the_image(tmp_path):
    base = _layer(tmp_path, "base", {"etc/os-release": "debian\n"})
    own = _layer(tmp_path, "own", {"bin/tool": "#!/bin/sh\n"})
    out = tmp_path / "image.tar"
    image_id = write_archive(
        out,
        ref="example/tool:1.0",
        layers=[Layer(base, "base"), Layer(own, "tool")],
        config=CONFIG,
        architecture="amd64",
        created="2024-09-10T13:35:05Z",
    )
    manifest, config = read_manifest(out)
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (base, own)]
    assert manifest == [
        {
            "Config": f"{image_id.removeprefix('sha256:')}.json",
            "RepoTags": ["example/tool:1.0"],
            "Layers": [f"{d}/layer.tar" for d in digests],
        }
    ]
    assert config["rootfs"] == {"type": "layers", "diff_ids": [f"sha256:{d}" for d in digests]}
    assert config["config"]["Entrypoint"] == ["/bin/tool", "-x"]
    assert config["config"]["Cmd"] == ["serve"]
    assert config["config"]["ExposedPorts"] == {"6001/tcp": {}}
    assert config["config"]["Labels"] == {"io.mochaos.recipe": "k1"}
    assert (config["architecture"], config["os"]) == ("amd64", "linux")
    assert [h["created_by"] for h in config["history"]] == ["base", "tool"]
    with tarfile.open(out) as tar:
        own_member = tar.extractfile(f"{digests[1]}/layer.tar")
        assert own_member is not None
        with tarfile.open(fileobj=own_member) as layer:
            info = layer.getmember("./bin/tool")
            assert (info.uid, info.gid) == (0, 0)
    # The same inputs give the same image.
    again = write_archive(
        tmp_path / "again.tar",
        ref="example/tool:1.0",
        layers=[Layer(base, "base"), Layer(own, "tool")],
        config=CONFIG,
        architecture="amd64",
        created="2024-09-10T13:35:05Z",
    )
    assert again == image_id
    assert not (tmp_path / "image.tar.partial").exists()


def test_a_real_engine_loads_the_archive_with_its_config_and_files(tmp_path: Path) -> None:
    docker = docker_or_skip("the archive is checked by its layout only")
    ref = f"mochaos-test/archive-{uuid.uuid4().hex[:8]}:v1"
    base = _layer(tmp_path, "base", {"etc/os-release": "debian\n"})
    own = _layer(tmp_path, "own", {"bin/tool": "#!/bin/sh\n"})
    write_archive(
        tmp_path / "image.tar",
        ref=ref,
        layers=[Layer(base, "b"), Layer(own, "t")],
        config=CONFIG,
        architecture="amd64",
        created="2024-09-10T13:35:05Z",
    )
    lines: list[str] = []
    load_archive(docker, tmp_path / "image.tar", progress=lines.append)
    try:
        assert docker.image_labels(ref) == {"io.mochaos.recipe": "k1"}
        cid = docker.create(["--entrypoint", "/bin/tool", ref])
        try:
            exported = subprocess.run(
                [docker.path, "export", cid],
                capture_output=True,
                timeout=60,
                env=docker.environment(),
                check=True,
            ).stdout
        finally:
            docker.remove(cid)
        (tmp_path / "fs.tar").write_bytes(exported)
        with tarfile.open(tmp_path / "fs.tar") as fs:
            names = set(fs.getnames())
        assert {"etc/os-release", "bin/tool"} <= names
        inspect = subprocess.run(
            [docker.path, "image", "inspect", ref],
            capture_output=True,
            text=True,
            env=docker.environment(),
            check=True,
        ).stdout
        assert json.loads(inspect)[0]["Config"]["Entrypoint"] == ["/bin/tool", "-x"]
        assert lines == [f"loading {ref} into the Docker engine (0 MiB)"]
    finally:
        subprocess.run(
            [docker.path, "image", "rm", ref],
            capture_output=True,
            timeout=120,
            env=docker.environment(),
        )
