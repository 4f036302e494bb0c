"""The operator's own rendering of a namespace's MatrixOne: its webhooks and controllers.

``render_main.go`` and ``webhook_admission.go`` (next to this file, ours) are copied into a
copy of a matrixone-operator checkout and built there as ``cmd/mochaos-render``: it admits
our LogSet, DNSet and CNPool through the operator's webhooks and runs its controllers'
first reconcile on them against an in-memory client, printing the ConfigMaps, Services,
StatefulSets and CloneSets they create. The binary is cached by checkout and by the digest
of our two files. Nothing of the operator is kept in our repository.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock

from mochaos.doubles.matrixone.build import build_env as nosumdb_env
from mochaos.errors import BuildError, InfraError
from mochaos.images.gomodule import GoToolchain
from mochaos.operator.provenance.checkout import Checkout
from mochaos.paths import cache_dir
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.runner import SubprocessRunner

HERE = Path(__file__).parent
MAIN = HERE / "render_main.go"
ADMISSION = HERE / "webhook_admission.go"
BUILD_TIMEOUT = 1800.0
RENDER_TIMEOUT = 120.0


def _digest() -> str:
    h = hashlib.sha256()
    for path in (MAIN, ADMISSION):
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def renderer(checkout: Checkout, *, progress: Progress = say) -> Path:
    """The renderer built against ``checkout`` (cached)."""
    out = cache_dir() / "images" / f"render-{checkout.key}-{_digest()}" / "mochaos-render"
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out.parent) + ".lock", timeout=BUILD_TIMEOUT):
        if out.is_file():
            return out
        runner = SubprocessRunner(progress=None, log_path=out.parent / "build.log")
        go = GoToolchain.find(runner)
        progress(f"building the operator's renderer against {checkout.describe} …")
        with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
            tree = Path(tmp) / "src"
            shutil.copytree(
                checkout.path, tree, symlinks=True, ignore=shutil.ignore_patterns(".git")
            )
            (tree / "cmd" / "mochaos-render").mkdir(parents=True)
            shutil.copy(MAIN, tree / "cmd" / "mochaos-render" / "main.go")
            shutil.copy(ADMISSION, tree / "pkg" / "webhook" / "zz_mochaos_admission.go")
            env = {"CGO_ENABLED": "0", "GOFLAGS": "-mod=mod", "GOWORK": "off", **nosumdb_env()}
            try:
                runner(
                    go.command(
                        ["build", "-o", str(out), "./cmd/mochaos-render"], cwd=tree, env=env
                    ),
                    what=f"go build of the renderer in {checkout.describe}",
                    timeout=BUILD_TIMEOUT,
                )
            except InfraError as err:
                raise BuildError(err.what, hint=f"see {out.parent / 'build.log'}") from err
        progress(f"renderer built ({out})")
    return out


def render(binary: Path, docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the operator creates for ``docs`` (a LogSet, a DNSet, a CNPool)."""
    text = yaml.safe_dump_all(list(docs))
    proc = subprocess.run(
        [str(binary)], input=text, capture_output=True, text=True, timeout=RENDER_TIMEOUT
    )
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise InfraError(
            f"the operator's renderer failed: {why[:300]}",
            hint="the operator's webhooks or controllers refused the topology",
        )
    return list(json.loads(proc.stdout))
