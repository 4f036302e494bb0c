"""A docker-loadable image archive written from layer tarballs, without a Docker engine.

The format is ``docker save``'s: ``manifest.json`` naming the config and the layers, the
config (``<sha256>.json``: platform, entrypoint, environment, labels, the layers' diff ids)
and each layer as ``<diff id>/layer.tar``. ``docker load`` reads it, and so does
``ctr images import``, which is what ``kind load image-archive`` runs in every node.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.runner import Runner

DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CHUNK = 1 << 20
LAYER_TIMEOUT = 600.0


@dataclass(frozen=True, slots=True)
class ImageConfig:
    """What a container of the image runs and with which defaults (the OCI config)."""

    entrypoint: tuple[str, ...]
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = (DEFAULT_PATH,)
    workdir: str = "/"
    ports: tuple[int, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    user: str = ""
    stop_signal: str = ""

    def as_json(self) -> dict[str, Any]:
        """The ``config`` object of the image configuration."""
        out: dict[str, Any] = {
            "Entrypoint": list(self.entrypoint),
            "Env": list(self.env),
            "WorkingDir": self.workdir,
            "Labels": dict(sorted(self.labels.items())),
        }
        if self.cmd:
            out["Cmd"] = list(self.cmd)
        if self.ports:
            out["ExposedPorts"] = {f"{p}/tcp": {} for p in self.ports}
        if self.user:
            out["User"] = self.user
        if self.stop_signal:
            out["StopSignal"] = self.stop_signal
        return out


@dataclass(frozen=True, slots=True)
class Layer:
    """One uncompressed layer tarball and the history line that says what it holds."""

    path: Path
    created_by: str


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def tar_directory(
    directory: Path,
    out: Path,
    *,
    runner: Runner,
    exclude: Sequence[str] = (),
    root_owned: bool = False,
) -> Path:
    """``directory``'s content as a layer tarball at ``out`` (GNU tar: owners, modes, links
    and device nodes kept as they are; names sorted). ``exclude`` takes tar patterns such
    as ``./dev/*``; ``root_owned`` stores every entry as owned by root (files we staged)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        "tar",
        "--create",
        "--file",
        str(out),
        "--directory",
        str(directory),
        "--numeric-owner",
        "--sort=name",
    ]
    if root_owned:
        argv += ["--owner=0", "--group=0"]
    argv += [f"--exclude={pattern}" for pattern in exclude]
    runner([*argv, "."], what=f"tar of {directory}", timeout=LAYER_TIMEOUT)
    return out


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mtime: int) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = mtime
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def write_archive(
    out: Path,
    *,
    ref: str,
    layers: Sequence[Layer],
    config: ImageConfig,
    architecture: str,
    created: str,
) -> str:
    """Write the image ``ref`` (``repository:tag``) as a ``docker save`` archive at ``out``;
    return its image id (``sha256:`` of the configuration). ``created`` is an RFC 3339
    time: the same inputs give the same id."""
    diff_ids = [sha256_file(layer.path) for layer in layers]
    image = {
        "architecture": architecture,
        "os": "linux",
        "created": created,
        "config": config.as_json(),
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{d}" for d in diff_ids]},
        "history": [{"created": created, "created_by": layer.created_by} for layer in layers],
    }
    config_bytes = json.dumps(image, sort_keys=True, separators=(",", ":")).encode()
    config_id = hashlib.sha256(config_bytes).hexdigest()
    manifest = [
        {
            "Config": f"{config_id}.json",
            "RepoTags": [ref],
            "Layers": [f"{d}/layer.tar" for d in diff_ids],
        }
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
        for layer, diff_id in zip(layers, diff_ids, strict=True):
            tar.add(layer.path, arcname=f"{diff_id}/layer.tar")
        _add_bytes(tar, f"{config_id}.json", config_bytes, 0)
        _add_bytes(tar, "manifest.json", json.dumps(manifest).encode(), 0)
    partial.replace(out)
    return f"sha256:{config_id}"


def read_manifest(archive: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(manifest.json, the first image's configuration) of an archive, for checks."""
    with tarfile.open(archive) as tar:
        manifest = json.load(_member(tar, "manifest.json"))
        config = json.load(_member(tar, manifest[0]["Config"]))
    return manifest, config


def load_archive(docker: DockerCli, archive: Path, *, progress: Progress = say) -> None:
    """``docker load`` of an archive written by :func:`write_archive`."""
    manifest, _ = read_manifest(archive)
    refs = ", ".join(manifest[0]["RepoTags"])
    progress(f"loading {refs} into the Docker engine ({archive.stat().st_size / 2**20:.0f} MiB)")
    docker.load(archive)


def _member(tar: tarfile.TarFile, name: str) -> io.BufferedReader:
    fh = tar.extractfile(name)
    if fh is None:
        raise KeyError(name)
    return fh  # type: ignore[return-value]
