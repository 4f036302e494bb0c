"""The Go programs the kind path builds from the module proxy, cached like the control plane.

The kind and helm CLIs, and what goes into kind's node image besides Kubernetes
itself: crictl, CoreDNS, the local-path provisioner, kubelet/kubeadm/kube-proxy
and the etcd version kubeadm expects. Each is a
:class:`~mochaos.binaries.component.Component` (cache folder, stamp keyed by version,
recipe and Go) obtained through :func:`mochaos.binaries.obtain.obtain`: Kubernetes
and etcd with the control plane's own recipes (:mod:`mochaos.binaries.control_plane`),
the others with one recipe, a wrapper module that requires the program's module and
builds its command.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mochaos.binaries import control_plane
from mochaos.binaries.component import Component, Recipe
from mochaos.binaries.go import Runner, fresh_dir, go, go_build
from mochaos.binaries.obtain import obtain as obtain_components
from mochaos.tooling.progress_callback import Progress

KIND_VERSION = "v0.33.0"
"""The kind release we pin (2026-08-26; served by the Go module proxy as sigs.k8s.io/kind).

The features we use set the floor: kubeadm config patches and extraMounts are
old, but a patch only applies when its apiVersion matches the config kind
generates, and kind generates kubeadm v1beta4 for Kubernetes >= 1.36 only
from v0.32.0 on (pkg/cluster/internal/kubeadm/config.go); the node image
(:data:`mochaos.cluster.kind.kind_config.NODE_IMAGE`) is one published with v0.33.0, and node
images are supported only with the kind release they were built for.
"""
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
    "registry": GoCommand(
        "github.com/distribution/distribution/v3",
        "github.com/distribution/distribution/v3/cmd/registry", "registry",
        "-s -w -X github.com/distribution/distribution/v3/version.version={version}",
    ),
    "local-path-provisioner": GoCommand(
        "github.com/rancher/local-path-provisioner", "github.com/rancher/local-path-provisioner",
        "local-path-provisioner",
    ),
}  # fmt: skip
"""The programs built with :func:`_build_command`, by component name."""

MODULE_RECIPE = "module-v1"

NODE_BINARIES = ("kubelet", "kubeadm", "kube-proxy")


def _build_command(c: Component, runner: Runner) -> None:
    program = PROGRAMS[c.name]
    work = fresh_dir(c.work_dir)
    module = f"{program.module}@{c.version}"
    (work / "go.mod").write_text(f"module mochaos.local/{c.name}bin\n")
    runner.progress(f"  resolving {module}")
    runner.run(
        [go(), "get", "-tool", f"{program.package}@{c.version}"],
        cwd=work, label="go get", module=module,
    )  # fmt: skip
    go_build(
        runner, c.path(program.binary), program.package, cwd=work, module=module,
        what=c.version, ldflags=program.ldflags.format(version=c.version),
    )  # fmt: skip


def program(name: str, version: str) -> Component:
    """The component building program ``name`` (a key of :data:`PROGRAMS`) at ``version``."""
    return Component(name, version, (PROGRAMS[name].binary,), MODULE_RECIPE)


def node_binaries() -> Component:
    """kubelet, kubeadm and kube-proxy of the control plane's Kubernetes release."""
    return Component(
        "kubernetes-node",
        control_plane.KUBERNETES_VERSION,
        NODE_BINARIES,
        control_plane.WRAPPER_RECIPE,
    )


def etcd(version: str) -> Component:
    """etcd at ``version`` (``v3.6.8``), with the control plane's etcd recipe."""
    return Component("etcd", version, ("etcd",), control_plane.WRAPPER_RECIPE)


RECIPES: dict[str, Recipe] = {
    **{name: _build_command for name in PROGRAMS},
    "kubernetes-node": control_plane.build_kubernetes,
    "kubernetes": control_plane.build_kubernetes,
    "etcd": control_plane.build_etcd,
}


def obtain(components: list[Component], *, progress: Progress) -> dict[str, Path]:
    """Every binary of ``components``, built (or downloaded) into the cache when missing."""
    obtain_components(components, recipes=RECIPES, progress=progress)
    return {b: c.path(b) for c in components for b in c.binaries}


def tool(name: str, version: str, *, progress: Progress) -> Path:
    """The cached binary of one program (kind, helm, …), built when missing."""
    c = program(name, version)
    return obtain([c], progress=progress)[c.binaries[0]]


def kind_cli(*, progress: Progress) -> Path:
    """The kind CLI of the release we pin."""
    return tool("kind", KIND_VERSION, progress=progress)


def helm_cli(*, progress: Progress) -> Path:
    """The helm CLI we pin."""
    return tool("helm", HELM_VERSION, progress=progress)
