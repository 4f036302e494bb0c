"""kind's node image built offline: ``python -m mochaos kind node-image``.

``kind build node-image`` pulls etcd, CoreDNS, pause, kindnetd and the storage
images from registries; this recipe needs none. It lays out what kind's base
image holds (a Debian root file system from debootstrap with systemd and
Debian's containerd and runc, and kind's own node files, read at build time
from the ``sigs.k8s.io/kind`` module), adds kubelet/kubeadm/kubectl of the
control plane's Kubernetes release, a static CNI configuration instead of
kindnetd (not on the module proxy), and imports every image kubeadm asks for
into the node's containerd. The result is tagged by a digest of its recipe,
so an unchanged recipe is built once, and kept as an archive in the cache, loaded again
into an engine that lacks it. Users with a registry keep kind's image.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import string
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from mochaos.binaries import control_plane
from mochaos.errors import BuildError
from mochaos.images import go_tools, preloaded, rootfs
from mochaos.images.archive import DEFAULT_PATH, ImageConfig, Layer, tar_directory, write_archive
from mochaos.images.go_tools import KIND_VERSION
from mochaos.images.gomodule import GoToolchain, module_source
from mochaos.images.preloaded import HELPER_REPOSITORY, PROVISIONER_REPOSITORY, ImageBuilder
from mochaos.images.recipe import Steps, elapsed
from mochaos.paths import cache_dir
from mochaos.tooling.apply import MANIFESTS
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.progress_callback import Progress
from mochaos.tooling.runner import SubprocessRunner

RECIPE = "node-v1"
REPOSITORY = "mochaos.local/kind-node"
SUITE = "trixie"
"""Debian 13: systemd 257 still runs on cgroup v1 hosts (forky's 262 does not)."""
PACKAGES = (
    "systemd", "conntrack", "iptables", "nftables", "iproute2", "ethtool", "util-linux",
    "mount", "kmod", "libseccomp2", "pigz", "e2fsprogs", "bash", "ca-certificates", "curl",
    "jq", "procps", "containerd", "runc", "containernetworking-plugins", "busybox-static",
)  # fmt: skip
"""kind's base image packages (its Dockerfile) without the NFS/iSCSI/fuse extras, plus
containerd, runc and the CNI plugins from Debian, and busybox for two small images."""

CRICTL_VERSION = "v1.36.0"
LOCAL_PATH_VERSION = "v0.0.30"
"""The newest local-path-provisioner on the module proxy (kind ships its own fork)."""

POD_SUBNET = "10.244.0.0/24"
"""The single node's pod range: the first /24 of kind's default pod subnet, which kubeadm
gives the first node."""
CNI_CONFIG = {
    "cniVersion": "1.0.0",
    "name": "mochaos",
    "plugins": [
        {
            "type": "ptp",
            "ipMasq": True,
            "mtu": 1500,
            "ipam": {
                "type": "host-local",
                "dataDir": "/run/cni-ipam-state",
                "ranges": [[{"subnet": POD_SUBNET}]],
                "routes": [{"dst": "0.0.0.0/0"}],
            },
        },
        {"type": "portmap", "capabilities": {"portMappings": True}},
    ],
}
"""Point-to-point veths (as kindnetd configures them) on one node, masqueraded beyond the
pod range (pods reach containers on kind's Docker network). Several nodes would need
routes between their ranges, which kindnetd adds and this does not: one node only."""

KUBEADM_WAIT = """#!/bin/sh
# On a cgroup v1 host kind runs kubeadm as soon as the node's entrypoint logs "detected
# cgroup v1", before systemd is up; kubeadm then fails on systemctl. Wait for systemd
# (when it is PID 1) to finish starting, then run kubeadm.
if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ]; then
  i=0
  while [ $i -lt 600 ]; do
    case "$(systemctl is-system-running 2>/dev/null)" in running|degraded) break ;; esac
    i=$((i + 1)); sleep 0.1
  done
fi
exec /usr/lib/mochaos/kubeadm "$@"
"""
CNI_NOTE = """# kind applies this file unless networking.disableDefaultCNI is set. The node image
# mo-chaos builds configures pod networking statically (/etc/cni/net.d/10-mochaos.conflist),
# so there is nothing to deploy: this only records that.
apiVersion: v1
kind: ConfigMap
metadata:
  name: mochaos-cni
  namespace: kube-system
data:
  cni: "static ptp + host-local, {{ .PodSubnet }} (see /etc/cni/net.d on the node)"
"""
NODE_CONFIG = ImageConfig(
    entrypoint=("/usr/local/bin/entrypoint", "/sbin/init"),
    env=("container=docker", DEFAULT_PATH),
    stop_signal="SIGRTMIN+3",
)
"""kind's base image config: systemd learns it runs in a container from ``container``, and
exits on SIGRTMIN+3 (SIGTERM would make it re-execute)."""
UNWANTED_UNITS = (
    "lib/systemd/system/multi-user.target.wants/*",
    "etc/systemd/system/*.wants/*",
    "lib/systemd/system/local-fs.target.wants/*",
    "lib/systemd/system/sockets.target.wants/*udev*",
    "lib/systemd/system/sockets.target.wants/*initctl*",
    "lib/systemd/system/basic.target.wants/*",
    "lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service",
)
"""Units kind's Dockerfile removes: the node runs only containerd, kubelet and its own."""
STORAGE_MANIFEST = MANIFESTS / "kind" / "default-storage.yaml"


def _module_dir(module: str, version: str) -> Path:
    """``module@version`` in Go's module cache (fetched from the proxy when missing)."""
    runner = SubprocessRunner(progress=None)
    go = GoToolchain.find(runner)
    return module_source(go, module, version, runner=runner, env={}).directory


def _kind_files() -> Path:
    """kind's node files (``images/base/files``) of the kind module we pin."""
    directory = _module_dir("sigs.k8s.io/kind", KIND_VERSION) / "images" / "base" / "files"
    if not directory.is_dir():
        raise BuildError(f"sigs.k8s.io/kind@{KIND_VERSION} has no images/base/files")
    return directory


def _digest_tree(digest: hashlib._Hash, root: Path) -> None:
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())


def _go_version() -> str:
    return GoToolchain.find(SubprocessRunner(progress=None)).version


def recipe_key(kind_files: Path) -> str:
    """Digest of everything the image is made from: recipe, versions, Go, our sources."""
    digest = hashlib.sha256()
    parts = (RECIPE, SUITE, ",".join(PACKAGES), KIND_VERSION, control_plane.KUBERNETES_VERSION,
             CRICTL_VERSION, LOCAL_PATH_VERSION, _go_version(), rootfs.mirror())  # fmt: skip
    digest.update("\0".join(parts).encode())
    _digest_tree(digest, kind_files)
    for source in (Path(__file__), Path(preloaded.__file__), STORAGE_MANIFEST):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:12]


def image_ref(key: str) -> str:
    """The node image's reference for a recipe key (the tag kind parses the version from)."""
    return f"{REPOSITORY}:{control_plane.KUBERNETES_VERSION}-{key}"


@dataclass(frozen=True)
class KubeadmImages:
    """The references kubeadm asks for, by component."""

    refs: dict[str, str]

    @classmethod
    def parse(cls, listing: str) -> KubeadmImages:
        """``kubeadm config images list`` output → {kube-apiserver: ref, etcd: ref, …}."""
        refs = {}
        for line in listing.split():
            name = line.rsplit("/", 1)[-1].split(":", 1)[0]
            refs[name] = line
        missing = {"kube-apiserver", "etcd", "coredns", "pause", "kube-proxy"} - set(refs)
        if missing:
            raise BuildError(f"kubeadm lists no image for {', '.join(sorted(missing))}")
        return cls(refs)

    def tag(self, name: str) -> str:
        """The tag of one component's reference (``3.6.8-0``)."""
        return self.refs[name].rsplit(":", 1)[1]

    def etcd_version(self) -> str:
        """The etcd release behind kubeadm's etcd tag (``3.6.8-0`` → ``v3.6.8``)."""
        return "v" + self.tag("etcd").split("-", 1)[0]


def sandbox_image(containerd_config: str) -> str:
    """The pause image kind's containerd config names (``sandbox_image = "…"``)."""
    for line in containerd_config.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "sandbox_image":
            return value.strip().strip('"')
    raise BuildError("kind's containerd config names no sandbox_image")


class NodeImageBuild:
    """One build of the node image (see the module docstring); :meth:`run` does it."""

    def __init__(self, *, docker: DockerCli, progress: Progress, architecture: str) -> None:
        self.docker = docker
        self.progress = progress
        self.architecture = architecture
        self.kind_files = _kind_files()
        self.key = recipe_key(self.kind_files)
        self.ref = image_ref(self.key)
        self.work = cache_dir() / "build" / f"kind-node-{self.key}"
        self.log = self.work / "build.log"
        self.saved = cache_dir() / "images" / f"kind-node-{self.key}.tar"

    STEPS = 6

    def _docker(self, *args: str, what: str, timeout: float = 900.0) -> str:
        result = self.docker.runner(
            [self.docker.path, *args], what=what, timeout=timeout,
            hint=f"see {self.log} and the docker log",
        )  # fmt: skip
        return result.stdout

    def run(self, *, force: bool = False) -> str:
        """Build the image unless this recipe's is already in the engine (or ``force``);
        its reference."""
        if not force and self.docker.image_id(self.ref):
            self.progress(f"mo-chaos: kind node image {self.ref} cached")
            if not self.saved.is_file():
                self._save()
            return self.ref
        if not force and self.saved.is_file():
            self.progress(f"mo-chaos: loading kind node image {self.ref} from {self.saved}")
            self.docker.load(self.saved)
            return self.ref
        self.work.mkdir(parents=True, exist_ok=True)
        self.progress(f"mo-chaos: building kind node image {self.ref} (log: {self.log})")
        t0 = time.monotonic()
        steps = Steps("kind node image", self.STEPS, progress=self.progress, log_path=self.log)
        with steps.step("Go programs: Kubernetes, crictl, the storage provisioner, etcd, CoreDNS"):
            binaries, wanted = self._programs()
        with steps.step(f"Debian {SUITE} root file system (debootstrap)"):
            root = rootfs.debootstrap(SUITE, PACKAGES, self.work / "rootfs", log=self.log)
        with steps.step("kind's node files, Kubernetes binaries, CNI"):
            pause_ref = self._lay_out(root, binaries)
        with steps.step("the images kubeadm and the storage class need"):
            archives = self._preloaded(root, binaries, wanted, pause_ref)
        with steps.step("base image (docker load)"):
            base = self._import_base(root)
        with steps.step("images into the node's containerd, docker commit"):
            self._commit(base, archives)
        shutil.rmtree(root, ignore_errors=True)
        self._remove_older()
        self._save()
        took = elapsed(time.monotonic() - t0)
        self.progress(f"mo-chaos: kind node image {self.ref} built in {took}")
        return self.ref

    def _programs(self) -> tuple[dict[str, Path], KubeadmImages]:
        """Every Go program of the node, and the images kubeadm asks for."""
        binaries = go_tools.obtain(
            [
                control_plane.component("kubernetes"),
                go_tools.node_binaries(),
                go_tools.program("crictl", CRICTL_VERSION),
                go_tools.program("local-path-provisioner", LOCAL_PATH_VERSION),
            ],
            progress=self.progress,
        )
        listing = subprocess.run(
            [str(binaries["kubeadm"]), "config", "images", "list", "--kubernetes-version",
             control_plane.KUBERNETES_VERSION], capture_output=True, text=True,
        )  # fmt: skip
        if listing.returncode != 0:
            raise BuildError(f"kubeadm config images list failed: {listing.stderr.strip()[:200]}")
        wanted = KubeadmImages.parse(listing.stdout)
        binaries |= go_tools.obtain(
            [
                go_tools.etcd(wanted.etcd_version()),
                go_tools.program("coredns", wanted.tag("coredns")),
            ],
            progress=self.progress,
        )
        return binaries, wanted

    # -- the layout kind's base image has ------------------------------------------------

    def _lay_out(self, root: Path, binaries: dict[str, Path]) -> str:
        files = self.kind_files

        def put(src: Path, dest: str, mode: int) -> None:
            target = root / dest.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
            target.chmod(mode)

        for src in sorted(p for p in files.rglob("*") if p.is_file()):
            rel = src.relative_to(files)
            executable = rel.parts[0] == "usr" or rel.parts[:2] == ("kind", "bin")
            put(src, "/" + str(rel), 0o755 if executable else 0o644)
        (root / "kind").chmod(0o755)
        (root / "kind" / "bin").chmod(0o755)
        # What kind's Dockerfile RUNs: no services but ours, no kernel messages in journald.
        for pattern in UNWANTED_UNITS:
            for path in root.glob(pattern):
                path.unlink()
        with (root / "etc/systemd/journald.conf").open("a") as fh:
            fh.write("ReadKMsg=no\n")
        init = root / "sbin" / "init"
        init.unlink(missing_ok=True)
        init.symlink_to("/usr/lib/systemd/systemd")
        self._chroot(root, "systemctl", "enable", "kubelet.service", "containerd.service",
                     "undo-mount-hacks.service")  # fmt: skip
        self._chroot(root, "systemctl", "mask", "systemd-binfmt.service")
        (root / "etc/kubernetes/manifests").mkdir(parents=True, exist_ok=True)
        # Debian installs containerd in /usr/bin and the CNI plugins in /usr/lib/cni; kind's
        # unit and containerd's default look in /usr/local/bin and /opt/cni/bin.
        (root / "usr/local/bin/containerd").symlink_to("/usr/bin/containerd")
        (root / "opt/cni").mkdir(parents=True, exist_ok=True)
        (root / "opt/cni/bin").symlink_to("/usr/lib/cni")
        spec = json.loads(self._chroot(root, "ctr", "oci", "spec"))
        spec.setdefault("hooks", {}).setdefault("createContainer", []).append(
            {"path": "/kind/bin/mount-product-files.sh"}
        )
        spec["process"].pop("rlimits", None)
        (root / "etc/containerd/cri-base.json").write_text(json.dumps(spec, indent=2))
        put(binaries["crictl"], "/usr/local/bin/crictl", 0o755)
        for name in ("kubelet", "kubectl"):
            put(binaries[name], f"/usr/bin/{name}", 0o755)
        put(binaries["kubeadm"], "/usr/lib/mochaos/kubeadm", 0o755)
        kubeadm = root / "usr/bin/kubeadm"
        kubeadm.write_text(KUBEADM_WAIT)
        kubeadm.chmod(0o755)
        cni = root / "etc/cni/net.d/10-mochaos.conflist"
        cni.parent.mkdir(parents=True, exist_ok=True)
        cni.write_text(json.dumps(CNI_CONFIG, indent=2))
        (root / "kind/version").write_text(control_plane.KUBERNETES_VERSION)
        manifests = root / "kind/manifests"
        manifests.mkdir(parents=True, exist_ok=True)
        (manifests / "default-cni.yaml").write_text(CNI_NOTE)
        return sandbox_image((root / "etc/containerd/config.toml").read_text())

    def _chroot(self, root: Path, *argv: str) -> str:
        result = subprocess.run(["chroot", str(root), *argv], capture_output=True, text=True)
        with self.log.open("a") as fh:
            fh.write(f"$ chroot {root} {' '.join(argv)}\n{result.stdout}{result.stderr}")
        if result.returncode != 0:
            raise BuildError(
                f"`{' '.join(argv)}` in the node's root file system failed: "
                f"{result.stderr.strip()[:200]}",
                hint=f"see {self.log}",
            )
        return result.stdout

    def _preloaded(
        self, root: Path, binaries: dict[str, Path], wanted: KubeadmImages, pause_ref: str
    ) -> list[preloaded.Preloaded]:
        out = self.work / "images"
        images = ImageBuilder(rootfs=root, work=self.work, out=out, architecture=self.architecture)
        built = [
            images.static(
                name, binaries[name], at=f"/usr/local/bin/{name}", tags=[wanted.refs[name]]
            )
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")
        ]
        built.append(
            images.static(
                "etcd", binaries["etcd"], at="/usr/local/bin/etcd", tags=[wanted.refs["etcd"]]
            )
        )
        built.append(images.static("coredns", binaries["coredns"], at="/coredns",
                                   tags=[wanted.refs["coredns"]]))  # fmt: skip
        built.append(images.kube_proxy(binaries["kube-proxy"], tags=[wanted.refs["kube-proxy"]]))
        pause_tags = list(dict.fromkeys([wanted.refs["pause"], pause_ref]))
        source = _kubernetes_source() / "build" / "pause" / "linux" / "pause.c"
        built.append(images.pause(source, version=wanted.tag("pause"), tags=pause_tags))
        provisioner = f"{PROVISIONER_REPOSITORY}:{LOCAL_PATH_VERSION}"
        built.append(images.static("local-path-provisioner", binaries["local-path-provisioner"],
                                   at="/usr/bin/local-path-provisioner", tags=[provisioner],
                                   entrypoint=False))  # fmt: skip
        busybox = preloaded.tag_safe(preloaded.package_version(root, "busybox-static"))
        helper = f"{HELPER_REPOSITORY}:busybox-{busybox}"
        built.append(images.helper(tag=helper))
        text = string.Template(STORAGE_MANIFEST.read_text()).substitute(
            provisioner_image=provisioner, helper_image=helper
        )
        (root / "kind/manifests/default-storage.yaml").write_text(text)
        return built

    # -- docker ------------------------------------------------------------------------

    def _import_base(self, root: Path) -> str:
        base = f"mochaos.local/kind-base:{self.key}"
        layer = self.work / "rootfs.tar"
        tar_directory(root, layer, runner=self.docker.runner)
        archive = self.work / "base.tar"
        write_archive(archive, ref=base, layers=[Layer(layer, f"debootstrap {SUITE} + kind")],
                      config=NODE_CONFIG, architecture=self.architecture,
                      created=preloaded.EPOCH)  # fmt: skip
        layer.unlink()
        self.docker.load(archive)
        archive.unlink()
        return base

    def _save(self) -> None:
        """Keep the image as an archive in the cache, for an engine whose store was wiped."""
        self.saved.parent.mkdir(parents=True, exist_ok=True)
        for old in self.saved.parent.glob("kind-node-*.tar"):
            old.unlink()
        partial = self.saved.with_name(self.saved.name + ".partial")
        self._docker("save", "--output", str(partial), self.ref, what=f"docker save {self.ref}")
        partial.replace(self.saved)

    def _remove_older(self) -> None:
        """Untag node images of older recipes (an image a node still runs stays)."""
        listed = self._docker("image", "ls", REPOSITORY, "--format", "{{.Repository}}:{{.Tag}}",
                              what="docker image ls")  # fmt: skip
        for ref in listed.split():
            if ref != self.ref:
                self.docker.runner([self.docker.path, "image", "rm", ref],
                                   what=f"docker image rm {ref}", check=False)  # fmt: skip

    def _commit(self, base: str, archives: list[preloaded.Preloaded]) -> None:
        cid = self._docker(
            "run",
            "--detach",
            "--network",
            "none",
            "--entrypoint",
            "sleep",
            base,
            "infinity",
            what="docker run of the image build container",
        ).strip()
        try:
            self._docker("exec", cid, "sh", "-c", "nohup containerd >/dev/null 2>&1 &",
                         what="starting containerd in the build container")  # fmt: skip
            self._docker(
                "exec", cid, "sh", "-c",
                "for i in $(seq 50); do [ -S /run/containerd/containerd.sock ] && ctr version "
                ">/dev/null 2>&1 && exit 0; sleep 0.2; done; exit 1",
                what="waiting for containerd in the build container",
            )  # fmt: skip
            for image in archives:
                self._docker("cp", str(image.archive), f"{cid}:/tmp/{image.name}.tar",
                             what=f"docker cp {image.name}")  # fmt: skip
                self._docker(
                    "exec", cid, "ctr", "--namespace=k8s.io", "images", "import",
                    "--label=io.cri-containerd.pinned=pinned", "--all-platforms", "--no-unpack",
                    "--digests", f"/tmp/{image.name}.tar",
                    what=f"ctr images import {image.tags[0]}",
                )  # fmt: skip
                self._docker("exec", cid, "rm", f"/tmp/{image.name}.tar",
                             what=f"removing {image.name}.tar")  # fmt: skip
                for extra in image.tags[1:]:
                    self._docker("exec", cid, "ctr", "--namespace=k8s.io", "images", "tag",
                                 "--force", _qualified(image.tags[0]), extra,
                                 what=f"ctr images tag {extra}")  # fmt: skip
            listed = self._docker("exec", cid, "ctr", "--namespace=k8s.io", "images", "list", "-q",
                                  what="ctr images list")  # fmt: skip
            missing = [t for i in archives for t in i.tags if not _listed(t, listed)]
            if missing:
                raise BuildError(f"not in the node's containerd after import: {', '.join(missing)}")
            self._docker("exec", cid, "pkill", "containerd", what="stopping containerd")
            # The build container ran `sleep`: put the node's entrypoint back.
            self._docker(
                "commit", "--change", f"ENTRYPOINT {json.dumps(list(NODE_CONFIG.entrypoint))}",
                "--change", "CMD []", cid, self.ref, what=f"docker commit {self.ref}",
            )  # fmt: skip
        finally:
            self.docker.remove(cid)
            self.docker.runner([self.docker.path, "image", "rm", base], what="docker image rm",
                               check=False)  # fmt: skip


def _qualified(ref: str) -> str:
    """The name containerd stores an imported reference under (Docker Hub's short names get
    ``docker.io/``)."""
    first = ref.split("/", 1)[0]
    return ref if "/" in ref and ("." in first or ":" in first) else f"docker.io/{ref}"


def _listed(ref: str, listing: str) -> bool:
    names = set(listing.split())
    return ref in names or f"docker.io/{ref}" in names


def _kubernetes_source() -> Path:
    return _module_dir("k8s.io/kubernetes", control_plane.KUBERNETES_VERSION)


def node_image(
    *, docker: DockerCli, progress: Progress, architecture: str = "amd64", force: bool = False
) -> str:
    """The offline node image's reference, built now unless this recipe's is cached."""
    lock = cache_dir() / "build" / "kind-node.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock), timeout=3600):
        build_ = NodeImageBuild(docker=docker, progress=progress, architecture=architecture)
        return build_.run(force=force)
