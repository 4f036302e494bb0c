"""Write container images as ``docker save`` archives, without a registry or a daemon.

An image here is a few layers (each a tar of a staged directory), a config
(entrypoint, environment, user) and the names it is tagged with. The archive
is what ``docker load``, ``ctr images import`` and ``kind load image-archive``
read: ``manifest.json``, the config blob named by its digest, and each layer
as ``<diff id>/layer.tar``.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mochaos.errors import BuildError

DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class ImageConfig:
    """The runtime part of an image config (the OCI/Docker ``config`` object)."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: tuple[str, ...] = (DEFAULT_PATH,)
    user: str = ""
    workdir: str = ""
    stop_signal: str = ""
    labels: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict:
        """The ``config`` object of the image config blob."""
        out: dict = {"Env": list(self.env)}
        if self.entrypoint:
            out["Entrypoint"] = list(self.entrypoint)
        if self.cmd:
            out["Cmd"] = list(self.cmd)
        if self.user:
            out["User"] = self.user
        if self.workdir:
            out["WorkingDir"] = self.workdir
        if self.stop_signal:
            out["StopSignal"] = self.stop_signal
        if self.labels:
            out["Labels"] = dict(self.labels)
        return out


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def tar_directory(stage: Path, out: Path) -> str:
    """Tar ``stage`` (its contents at the root, owned by root) into ``out``; the sha256 hex.

    GNU tar keeps symlinks, modes and device nodes as they are; names are sorted and
    times zeroed, so the same tree gives the same layer (and digest).
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    tar = shutil.which("tar")
    if tar is None:
        raise BuildError("tar not found", hint="install GNU tar")
    result = subprocess.run(
        [tar, "--create", "--file", str(out), "--directory", str(stage), "--numeric-owner",
         "--owner=0", "--group=0", "--sort=name", "--mtime=@0", "."],
        capture_output=True, text=True,
    )  # fmt: skip
    if result.returncode != 0:
        raise BuildError(f"tar of {stage} failed: {result.stderr.strip()[:200]}")
    return _sha256(out)


def write_archive(
    out: Path,
    *,
    tags: Sequence[str],
    layers: Sequence[Path],
    config: ImageConfig,
    architecture: str,
) -> str:
    """Write the image made of ``layers`` (tar files, bottom first) to ``out``; its config digest.

    ``tags`` are full references (``registry.k8s.io/pause:3.10.2``); the first names
    the image in messages. ``out`` is written to a temporary name and renamed.
    """
    diff_ids = [_sha256(layer) for layer in layers]
    blob = json.dumps(
        {
            "architecture": architecture,
            "os": "linux",
            "config": config.as_json(),
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{d}" for d in diff_ids]},
            "history": [{"created_by": "mochaos"} for _ in layers],
        },
        sort_keys=True,
    ).encode()
    config_digest = hashlib.sha256(blob).hexdigest()
    manifest = [
        {
            "Config": f"{config_digest}.json",
            "RepoTags": list(tags),
            "Layers": [f"{d}/layer.tar" for d in diff_ids],
        }
    ]
    tmp = out.with_name(f".{out.name}.partial")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tmp, "w") as archive:
        for layer, diff_id in zip(layers, diff_ids, strict=True):
            archive.add(str(layer), arcname=f"{diff_id}/layer.tar")
        _add_bytes(archive, f"{config_digest}.json", blob)
        _add_bytes(archive, "manifest.json", json.dumps(manifest).encode())
    tmp.replace(out)
    return config_digest


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    archive.addfile(info, io.BytesIO(data))


def archive_tags(path: Path) -> list[str]:
    """The references a ``docker save`` archive is tagged with."""
    with tarfile.open(path) as archive:
        member = archive.extractfile("manifest.json")
        assert member is not None
        return [t for entry in json.load(member) for t in entry.get("RepoTags") or []]
