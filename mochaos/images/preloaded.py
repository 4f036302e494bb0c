"""The images kind's node must already hold, built from our binaries (no registry).

kubeadm's own list (``kubeadm config images list``): the control plane, etcd,
kube-proxy, CoreDNS and pause, each under the exact reference kubeadm and
containerd ask for; plus the storage provisioner and its helper. Static Go
programs get a small shared base layer (users, ``/tmp``, CA certificates);
kube-proxy also gets iptables and conntrack copied from the node's Debian root
file system, with a wrapper that picks the iptables backend the node uses.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mochaos.errors import BuildError
from mochaos.images.archive import ImageConfig, Layer, tar_directory, write_archive
from mochaos.images.rootfs import closure, copy_paths
from mochaos.tooling.runner import SubprocessRunner

PROVISIONER_REPOSITORY = "mochaos.local/local-path-provisioner"
HELPER_REPOSITORY = "mochaos.local/local-path-helper"

IPTABLES_COMMANDS = (
    "iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save",
    "ip6tables-restore",
)  # fmt: skip
IPTABLES_WRAPPER = """#!/bin/sh
# Chooses the iptables backend (nft or legacy) that already holds the node's rules, points
# the iptables commands at it, and runs the command it was called as: kube-proxy must write
# its rules where the node's other components write theirs.
rules() {
  ("xtables-$1-multi" iptables-save; "xtables-$1-multi" ip6tables-save) 2>/dev/null | grep -c '^-'
}
nft=$(rules nft)
legacy=$(rules legacy)
mode=nft
[ "${legacy:-0}" -gt "${nft:-0}" ] && mode=legacy
for cmd in {commands}; do ln -sf "xtables-$mode-multi" "/usr/sbin/$cmd"; done
exec "/usr/sbin/$(basename "$0")" "$@"
"""
BUSYBOX_APPLETS = ("sh", "grep", "ln", "basename", "mkdir", "rm", "chmod", "ls", "cat")
"""The shell tools the kube-proxy wrapper and the storage helper's scripts use."""


EPOCH = "1970-01-01T00:00:00Z"
"""The images' creation time: the same binaries give the same image ids."""


@dataclass(frozen=True)
class Preloaded:
    """One image archive for the node and the references it goes by (the archive names the
    first; the node build tags the others)."""

    name: str
    archive: Path
    tags: tuple[str, ...]


class ImageBuilder:
    """Stages, tars and archives the node's images into ``out`` (work files in ``work``)."""

    def __init__(self, *, rootfs: Path, work: Path, out: Path, architecture: str) -> None:
        self.rootfs = rootfs
        self.work = work
        self.out = out
        self.architecture = architecture
        self._base: Layer | None = None

    def _stage(self, name: str) -> Path:
        stage = self.work / "stage" / name
        if stage.exists():
            shutil.rmtree(stage)
        stage.mkdir(parents=True)
        return stage

    def _layer(self, name: str, stage: Path) -> Layer:
        layer = self.work / "layers" / f"{name}.tar"
        tar_directory(stage, layer, runner=SubprocessRunner(progress=None), root_owned=True)
        return Layer(layer, f"mochaos: {name}")

    def base_layer(self) -> Layer:
        """Users (root, nobody, nonroot), ``/tmp``, nsswitch and CA certificates."""
        if self._base is None:
            stage = self._stage("base")
            etc = stage / "etc"
            etc.mkdir()
            (etc / "passwd").write_text(
                "root:x:0:0:root:/root:/sbin/nologin\n"
                "nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
                "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
            )
            (etc / "group").write_text("root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n")
            (etc / "nsswitch.conf").write_text("hosts: files dns\n")
            tmp = stage / "tmp"
            tmp.mkdir()
            tmp.chmod(0o1777)
            copy_paths(self.rootfs, ["/etc/ssl/certs/ca-certificates.crt"], stage)
            self._base = self._layer("base", stage)
        return self._base

    def _archive(
        self, name: str, tags: Sequence[str], layers: Sequence[Layer], config: ImageConfig
    ) -> Preloaded:
        archive = self.out / f"{name}.tar"
        write_archive(archive, ref=tags[0], layers=layers, config=config,
                      architecture=self.architecture, created=EPOCH)  # fmt: skip
        return Preloaded(name, archive, tuple(tags))

    def static(
        self, name: str, binary: Path, *, at: str, tags: Sequence[str], entrypoint: bool = True
    ) -> Preloaded:
        """A static program at ``at`` on the base layer."""
        stage = self._stage(name)
        dest = stage / at.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(binary, dest)
        dest.chmod(0o755)
        config = ImageConfig(entrypoint=(at,) if entrypoint else ())
        return self._archive(name, tags, [self.base_layer(), self._layer(name, stage)], config)

    def _busybox(self, stage: Path) -> None:
        copy_paths(self.rootfs, ["/bin/busybox"], stage)
        busybox = stage / "bin" / "busybox"
        if not busybox.is_file():
            raise BuildError("busybox-static is missing from the node's root file system")
        for applet in BUSYBOX_APPLETS:
            link = stage / "bin" / applet
            if not link.exists():
                link.symlink_to("busybox")

    def kube_proxy(self, binary: Path, *, tags: Sequence[str]) -> Preloaded:
        """kube-proxy with iptables (both backends, the wrapper choosing) and conntrack."""
        stage = self._stage("kube-proxy")
        extensions = f"/usr/lib/{_multiarch(self.rootfs)}/xtables"
        # The extensions (match and target modules) are loaded at run time: their own
        # libraries (libm, …) belong to the closure as much as the programs'.
        modules = sorted((self.rootfs / extensions.lstrip("/")).glob("*.so"))
        programs = [
            "/usr/sbin/xtables-nft-multi",
            "/usr/sbin/xtables-legacy-multi",
            "/usr/sbin/conntrack",
            *(f"{extensions}/{p.name}" for p in modules),
        ]
        copy_paths(self.rootfs, closure(self.rootfs, programs), stage)
        self._busybox(stage)
        sbin = stage / "usr" / "sbin"
        wrapper = sbin / "iptables-wrapper"
        wrapper.write_text(IPTABLES_WRAPPER.replace("{commands}", " ".join(IPTABLES_COMMANDS)))
        wrapper.chmod(0o755)
        for cmd in IPTABLES_COMMANDS:
            link = sbin / cmd
            link.unlink(missing_ok=True)
            link.symlink_to("iptables-wrapper")
        dest = stage / "usr" / "local" / "bin" / "kube-proxy"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(binary, dest)
        layers = [self.base_layer(), self._layer("kube-proxy", stage)]
        config = ImageConfig(entrypoint=("/usr/local/bin/kube-proxy",))
        return self._archive("kube-proxy", tags, layers, config)

    def helper(self, *, tag: str) -> Preloaded:
        """The storage provisioner's helper: busybox, which runs its setup/teardown scripts."""
        stage = self._stage("local-path-helper")
        self._busybox(stage)
        layers = [self.base_layer(), self._layer("local-path-helper", stage)]
        return self._archive("local-path-helper", [tag], layers, ImageConfig(entrypoint=()))

    def pause(self, source: Path, *, version: str, tags: Sequence[str]) -> Preloaded:
        """Kubernetes' pause program (``build/pause/linux/pause.c``), compiled static."""
        gcc = shutil.which("gcc") or shutil.which("cc")
        if gcc is None:
            raise BuildError("a C compiler is needed for the pause image", hint="install gcc")
        stage = self._stage("pause")
        result = subprocess.run(
            [gcc, "-Os", "-static", "-Wall", f"-DVERSION={version}", "-o",
             str(stage / "pause"), str(source)],
            capture_output=True, text=True,
        )  # fmt: skip
        if result.returncode != 0:
            raise BuildError(
                f"compiling pause.c failed: {result.stderr.strip()[:200]}",
                hint="install gcc and the C library's static archive (Debian: libc6-dev)",
            )
        layer = self._layer("pause", stage)
        return self._archive("pause", tags, [layer], ImageConfig(entrypoint=("/pause",)))


def _multiarch(root: Path) -> str:
    """The Debian multiarch triplet of ``root`` (``x86_64-linux-gnu``)."""
    for candidate in sorted((root / "usr" / "lib").glob("*-linux-gnu*")):
        if (candidate / "xtables").is_dir():
            return candidate.name
    raise BuildError(f"no iptables extensions under {root / 'usr/lib'}")


def package_version(root: Path, package: str) -> str:
    """The version of a Debian package installed in ``root``."""
    result = subprocess.run(
        ["chroot", str(root), "dpkg-query", "-W", "-f", "${Version}", package],
        capture_output=True, text=True,
    )  # fmt: skip
    if result.returncode != 0 or not result.stdout.strip():
        raise BuildError(f"package {package} is not installed in {root}")
    return result.stdout.strip()


def tag_safe(version: str) -> str:
    """A Debian version as an image tag (``1:1.37.0-4`` → ``1.37.0-4``)."""
    safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in version.split(":")[-1])
    return safe[:128]
