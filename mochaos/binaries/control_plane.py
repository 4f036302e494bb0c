"""The local cluster's control plane: Kubernetes, etcd, kwok, kwok's Stages, by version.

:func:`build` puts :data:`COMPONENTS` into the cache: release binaries where
``MOCHAOS_BINARIES`` allows (:mod:`mochaos.binaries.download`), Go builds from modules for
the rest. k8s.io/kubernetes cannot be ``go install``-ed (its go.mod replaces every staging
module with a local path), so it is built inside a generated wrapper module whose replace
block maps each staging module to its published v0.x twin, read from the release's own
go.mod. etcd gets its own wrapper for the same reason; kwok and kwokctl install at their own
pins. The Kubernetes and etcd recipes also build what kind's node image needs
(:mod:`mochaos.images.go_tools`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from mochaos.binaries import kwok_stages
from mochaos.binaries.component import Component, Recipe
from mochaos.binaries.go import (
    Runner,
    fresh_dir,
    go,
    go_build,
    module_download,
    module_gomod,
    stderr_progress,
)
from mochaos.binaries.obtain import obtain
from mochaos.errors import BuildError
from mochaos.tooling.progress_callback import Progress

KUBERNETES_VERSION = "v1.36.3"
ETCD_VERSION = "v3.6.16"
KWOK_VERSION = "v0.8.0"

K8S_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
WRAPPER_RECIPE = "wrapper-v1"
"""The recipe revision of a wrapper-module build (Kubernetes, etcd)."""

COMPONENTS = (
    Component("kubernetes", KUBERNETES_VERSION, K8S_BINARIES, WRAPPER_RECIPE),
    Component("etcd", ETCD_VERSION, ("etcd",), WRAPPER_RECIPE),
    Component("kwok", KWOK_VERSION, ("kwok", "kwokctl"), "install-v1"),
    Component(
        "kwok-stages",
        KWOK_VERSION,
        (),
        kwok_stages.RECIPE,
        files=(kwok_stages.DEFAULTS_FILE, kwok_stages.STORAGE_CLASS_FILE),
    ),
)
"""The control plane: what every local cluster runs (:func:`build`)."""


def component(name: str) -> Component:
    """The control-plane component of that name (kubernetes, etcd, kwok, kwok-stages)."""
    for c in COMPONENTS:
        if c.name == name:
            return c
    raise KeyError(name)


def binary_paths() -> dict[str, Path]:
    """Every cached binary by name (whether built or not)."""
    return {b: c.path(b) for c in COMPONENTS for b in c.binaries}


def all_built() -> bool:
    """True when the whole control plane is in the cache."""
    return all(c.is_built() for c in COMPONENTS)


def build(*, force: bool = False, progress: Progress = stderr_progress) -> dict[str, Path]:
    """Put every missing control-plane component into the cache; return its binary paths.

    Idempotent: a component whose stamp matches is skipped. Raises BuildError with a
    one-line reason on the first failure.
    """
    obtain(COMPONENTS, recipes=RECIPES, progress=progress, force=force)
    return binary_paths()


def _staging_replaces(k8s_gomod: str, staging_version: str) -> list[str]:
    """Replace lines mapping every ./staging module of k8s's go.mod to its published twin."""
    mods = re.findall(r"^\s*(k8s\.io/[A-Za-z0-9._-]+)\s+=>\s+\./staging/", k8s_gomod, re.M)
    if not mods:
        raise BuildError(
            "k8s.io/kubernetes go.mod has no staging replace block",
            hint="pick a release the recipe knows (v1.35.x or v1.36.x)",
        )
    return [f"replace {m} => {m} {staging_version}" for m in sorted(set(mods))]


def _k8s_ldflags(version: str) -> str:
    minor = version.split(".")[1]
    date = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor=1",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
            f"-X {pkg}.buildDate={date}",
        ]
    return " ".join(flags)


def build_kubernetes(c: Component, runner: Runner) -> None:
    """Recipe: the commands ``c.binaries`` of k8s.io/kubernetes at ``c.version``, in one
    ``go build`` inside a wrapper module (the control plane's, or the node image's)."""
    work = fresh_dir(c.work_dir)
    module = f"k8s.io/kubernetes@{c.version}"
    gomod = module_gomod(runner, module, work)
    staging = "v0." + c.version.removeprefix("v1.")
    lines = ["module mochaos.local/k8sbin", ""]
    lines += [ln for ln in gomod.splitlines() if ln.startswith("godebug")]
    lines += _staging_replaces(gomod, staging)
    (work / "go.mod").write_text("\n".join(lines) + "\n")
    tools = [f"k8s.io/kubernetes/cmd/{b}@{c.version}" for b in c.binaries]
    runner.progress(f"  resolving {len(tools)} commands of {module} (staging {staging})")
    runner.run([go(), "get", "-tool", *tools], cwd=work, label="go get", module=module)
    ldflags = _k8s_ldflags(c.version)
    # One go build for all four: they share most packages, and the compiler keeps both
    # cores busy across them (a third faster than building one after the other).
    for i, b in enumerate(c.binaries, 1):
        c.path(b).unlink(missing_ok=True)
        runner.progress(f"  [{i}/{len(c.binaries)}] {b} {c.version} …")
    runner.run(
        [
            go(),
            "build",
            "-v",
            "-trimpath",
            "-tags=selinux,notest",
            "-ldflags",
            ldflags,
            "-o",
            str(c.directory) + "/",
            *(f"k8s.io/kubernetes/cmd/{b}" for b in c.binaries),
        ],
        cwd=work,
        label="kubernetes",
        module=module,
        outputs={b: c.path(b) for b in c.binaries},
    )


def build_etcd(c: Component, runner: Runner) -> None:
    """Recipe: etcd's server at ``c.version``, in a wrapper module."""
    work = fresh_dir(c.work_dir)
    module = f"go.etcd.io/etcd/server/v3@{c.version}"
    (work / "go.mod").write_text("module mochaos.local/etcdbin\n")
    runner.progress(f"  resolving {module}")
    runner.run([go(), "get", "-tool", module], cwd=work, label="go get", module=module)
    go_build(
        runner, c.path("etcd"), "go.etcd.io/etcd/server/v3",
        cwd=work, module=module, what=c.version,
    )  # fmt: skip


def _build_kwok(c: Component, runner: Runner) -> None:
    work = fresh_dir(c.work_dir)
    ver = c.version.removeprefix("v")
    (work / "go.mod").write_text("module mochaos.local/kwokbin\n")
    tools = [f"sigs.k8s.io/kwok/cmd/{b}@{c.version}" for b in c.binaries]
    for i, b in enumerate(c.binaries, 1):
        module = f"sigs.k8s.io/kwok/cmd/{b}@{c.version}"
        if i == 1:  # one wrapper module requiring kwok at its own pins (no replaces)
            runner.run([go(), "get", "-tool", *tools], cwd=work, label="go get", module=module)
        go_build(
            runner, c.path(b), f"sigs.k8s.io/kwok/cmd/{b}",
            cwd=work, module=module, what=c.version, step=(i, len(c.binaries)),
            ldflags=f"-s -w -X sigs.k8s.io/kwok/pkg/consts.Version={ver}",
        )  # fmt: skip


def _build_kwok_stages(c: Component, runner: Runner) -> None:
    work = fresh_dir(c.work_dir)
    module = f"sigs.k8s.io/kwok@{c.version}"
    (work / "go.mod").write_text("module mochaos.local/kwokstages\n")
    runner.progress(f"  reading kwok's default Stages from {module}")
    found = module_download(runner, module, work)
    kwok_stages.write_defaults(Path(found["Dir"]), c.path(kwok_stages.DEFAULTS_FILE))


RECIPES: dict[str, Recipe] = {
    "kubernetes": build_kubernetes,
    "etcd": build_etcd,
    "kwok": _build_kwok,
    "kwok-stages": _build_kwok_stages,
}
"""The control plane's recipes, by component name."""
