"""kruise-manager built from OpenKruise's Go module, cached with the CRDs and webhook
configurations of the same module (:mod:`mochaos.kruise.module` says how the module is
wrapped and read). The one recipe for the local cluster's manager and for kind's image of it.
"""

from __future__ import annotations

from pathlib import Path

from mochaos.binaries.component import Component
from mochaos.binaries.go import (
    Runner,
    fresh_dir,
    go,
    go_build,
    module_download,
    stderr_progress,
)
from mochaos.binaries.obtain import obtain
from mochaos.kruise import module
from mochaos.tooling.progress_callback import Progress


def component(version: str | None = None) -> Component:
    """kruise-manager of OpenKruise ``version`` (default: what the operator's main branch
    pins), with the CRDs and webhook configurations of the same module."""
    return Component(
        "kruise",
        version or module.DEFAULT_VERSION,
        (module.BINARY,),
        module.RECIPE,
        files=(module.CRDS_FILE, module.WEBHOOKS_FILE),
    )


def kruise_manager(version: str | None = None, *, progress: Progress = stderr_progress) -> Path:
    """The kruise-manager binary of OpenKruise ``version`` (default
    :data:`mochaos.kruise.module.DEFAULT_VERSION`), built on first use; its CRDs and
    webhook configurations are in the same folder (:func:`component`)."""
    c = component(version)
    obtain([c], recipes={c.name: _build}, progress=progress)
    return c.path(module.BINARY)


def _build(c: Component, runner: Runner) -> None:
    work = fresh_dir(c.work_dir)
    name = f"{module.MODULE}@{c.version}"
    (work / "go.mod").write_text("module mochaos.local/kruiseprobe\n")
    found = module_download(runner, name, work)
    (work / "go.mod").write_text(module.wrapper_gomod(Path(found["GoMod"]).read_text()))
    runner.progress(f"  resolving {name} (raising {', '.join(module.RAISED)})")
    for args in module.go_steps(c.version):
        runner.run([go(), *args], cwd=work, label="go get", module=name)
    binary = c.binaries[0]
    c.path(binary).unlink(missing_ok=True)
    go_build(runner, c.path(binary), module.MODULE, cwd=work, module=name, what=c.version)
    module.write_manifests(Path(found["Dir"]), c.directory)
    runner.progress(f"  CRDs and webhook configurations read from {name}")
