"""The Go programs the kind path builds from the module proxy, cached like the control plane.

The kind and helm CLIs, and what goes into kind's node image besides Kubernetes
itself: crictl, CoreDNS, the local-path provisioner, kubelet/kubeadm/kube-proxy
and the etcd version kubeadm expects. Each is a
:class:`~mochaos.cluster.build.Component` (cache folder, stamp keyed by version,
recipe and Go) obtained through :func:`mochaos.cluster.build.obtain`: Kubernetes
and etcd with the control plane's own recipes, the others with one recipe, a
wrapper module that requires the program's module and builds its command.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from mochaos.cluster import build
from mochaos.cluster.kind_config import KIND_VERSION

HELM_VERSION = "v3.22.0"
"""Helm 3's newest release on the module proxy when this was written (2026-09-09)."""


@dataclass(frozen=True)
class GoCommand:
    """A ``main`` package built from one module at one version."""

    module: str
    package: str
    binary: str
    ldflags: str = "-s -w"


PROGRAMS: dict[str, GoCommand] = {
    "kind": GoCommand("sigs.k8s.io/kind", "sigs.k8s.io/kind", "kind"),
    "helm": GoCommand(
        "helm.sh/helm/v3", "helm.sh/helm/v3/cmd/helm", "helm",
        "-s -w -X helm.sh/helm/v3/internal/version.version={version}",
    ),
    "crictl": GoCommand(
        "sigs.k8s.io/cri-tools", "sigs.k8s.io/cri-tools/cmd/crictl", "crictl",
        "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version={version}",
    ),
    "coredns": GoCommand("github.com/coredns/coredns", "github.com/coredns/coredns", "coredns"),
    "local-path-provisioner": GoCommand(
        "github.com/rancher/local-path-provisioner", "github.com/rancher/local-path-provisioner",
        "local-path-provisioner",
    ),
}  # fmt: skip
"""The programs built with :func:`_build_command`, by component name."""

MODULE_RECIPE = "module-v1"

NODE_BINARIES = ("kubelet", "kubeadm", "kube-proxy")


def _build_command(c: build.Component, runner: build._Runner) -> None:
    program = PROGRAMS[c.name]
    work = build._fresh_dir(build.cache_dir() / "build" / f"{c.name}-{c.version}")
    module = f"{program.module}@{c.version}"
    (work / "go.mod").write_text(f"module mochaos.local/{c.name}bin\n")
    runner.progress(f"  resolving {module}")
    runner.run(
        [build._go(), "get", "-tool", f"{program.package}@{c.version}"],
        cwd=work, label="go get", module=module,
    )  # fmt: skip
    t0 = time.monotonic()
    runner.progress(f"  [1/1] {program.binary} {c.version} …")
    runner.run(
        [
            build._go(), "build", "-v", "-trimpath",
            "-ldflags", program.ldflags.format(version=c.version),
            "-o", str(c.path(program.binary)), program.package,
        ],
        cwd=work, label=program.binary, module=module,
    )  # fmt: skip
    runner.progress(f"  [1/1] {program.binary} built in {build._fmt(time.monotonic() - t0)}")


def program(name: str, version: str) -> build.Component:
    """The component building program ``name`` (a key of :data:`PROGRAMS`) at ``version``."""
    return build.Component(name, version, (PROGRAMS[name].binary,), MODULE_RECIPE)


def node_binaries() -> build.Component:
    """kubelet, kubeadm and kube-proxy of the control plane's Kubernetes release."""
    return build.Component("kubernetes-node", build.KUBERNETES_VERSION, NODE_BINARIES, "wrapper-v1")


def etcd(version: str) -> build.Component:
    """etcd at ``version`` (``v3.6.8``), with the control plane's etcd recipe."""
    return build.Component("etcd", version, ("etcd",), "wrapper-v1")


RECIPES: dict[str, build.Recipe] = {
    **{name: _build_command for name in PROGRAMS},
    "kubernetes-node": build._build_kubernetes,
    "kubernetes": build._build_kubernetes,
    "etcd": build._build_etcd,
}


def obtain(components: list[build.Component], *, progress: build.Progress) -> dict[str, Path]:
    """Every binary of ``components``, built (or downloaded) into the cache when missing."""
    build.obtain(components, recipes=RECIPES, progress=progress)
    return {b: c.path(b) for c in components for b in c.binaries}


def tool(name: str, version: str, *, progress: build.Progress) -> Path:
    """The cached binary of one program (kind, helm, …), built when missing."""
    c = program(name, version)
    return obtain([c], progress=progress)[c.binaries[0]]


def kind_cli(*, progress: build.Progress) -> Path:
    """The kind CLI of the release we pin."""
    return tool("kind", KIND_VERSION, progress=progress)


def helm_cli(*, progress: build.Progress) -> Path:
    """The helm CLI we pin."""
    return tool("helm", HELM_VERSION, progress=progress)
