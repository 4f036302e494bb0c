"""Image archives written without a daemon: what docker load and ctr import read."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from mochaos.images.archive import ImageConfig, archive_tags, tar_directory, write_archive


def _stage(tmp_path: Path) -> Path:
    stage = tmp_path / "stage"
    (stage / "usr" / "bin").mkdir(parents=True)
    (stage / "usr" / "bin" / "tool").write_text("#!/bin/sh\n")
    (stage / "usr" / "bin" / "tool").chmod(0o755)
    (stage / "bin").symlink_to("usr/bin")
    return stage


def test_the_same_tree_gives_the_same_layer_digest(tmp_path: Path) -> None:
    stage = _stage(tmp_path)
    first = tar_directory(stage, tmp_path / "a.tar")
    (stage / "usr" / "bin" / "tool").touch()  # a new mtime: times are zeroed
    assert tar_directory(stage, tmp_path / "b.tar") == first
    (stage / "usr" / "bin" / "tool").write_text("changed\n")
    assert tar_directory(stage, tmp_path / "c.tar") != first


def test_the_archive_names_its_config_layers_and_tags(tmp_path: Path) -> None:
    layer = tmp_path / "layer.tar"
    diff_id = tar_directory(_stage(tmp_path), layer)
    out = tmp_path / "image.tar"
    config = ImageConfig(
        entrypoint=("/usr/bin/tool",), user="65532:65532", stop_signal="SIGRTMIN+3"
    )
    digest = write_archive(
        out, tags=["registry.k8s.io/pause:3.10.2", "registry.k8s.io/pause:3.10"],
        layers=[layer], config=config, architecture="amd64",
    )  # fmt: skip
    assert archive_tags(out) == ["registry.k8s.io/pause:3.10.2", "registry.k8s.io/pause:3.10"]
    with tarfile.open(out) as tar:
        (manifest,) = json.load(tar.extractfile("manifest.json"))
        blob = json.load(tar.extractfile(f"{digest}.json"))
        assert f"{diff_id}/layer.tar" in tar.getnames()
    assert manifest["Layers"] == [f"{diff_id}/layer.tar"]
    assert blob["rootfs"]["diff_ids"] == [f"sha256:{diff_id}"]
    assert blob["config"]["Entrypoint"] == ["/usr/bin/tool"]
    assert blob["config"]["User"] == "65532:65532"
    assert blob["config"]["StopSignal"] == "SIGRTMIN+3"
    assert (blob["architecture"], blob["os"]) == ("amd64", "linux")
