"""The OpenKruise double: CloneSets (apps.kruise.io/v1alpha1) and Advanced StatefulSets
(apps.kruise.io/v1beta1) turned into kwok pods the way kruise v1.4.0 does it, for the
MatrixOne operator's CNSet, ProxySet, LogSet and DNSet. See README.md in this folder for
what is and is not emulated, with the kruise and operator source it follows.

:data:`SPEC` runs it as ``python -m mochaos.doubles.kruise --kubeconfig K --state-dir D``
(foreground, cluster-wide); health is its heartbeat file in D; ``prepare`` installs our
CRDs unless someone else's are installed.
"""

from __future__ import annotations

import functools
import hashlib
import sys
from pathlib import Path

from mochaos.doubles import DoubleContext, DoubleSpec


def code_digest(root: Path) -> str:
    """A short digest of the double's code (its ``.py`` and CRD files under ``root``): it
    rides on the command line so that a cluster kept across an upgrade, or a ``git pull``
    in an editable install, tells its running double apart from the current code."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".yaml")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


@functools.cache
def _own_digest() -> str:
    return code_digest(Path(__file__).parent)


def command(ctx: DoubleContext) -> list[str]:
    """The argv of the double for ``ctx``."""
    return [
        sys.executable,
        "-m",
        "mochaos.doubles.kruise",
        "--kubeconfig",
        str(ctx.kubeconfig),
        "--state-dir",
        str(ctx.state_dir),
        "--code",
        _own_digest(),
    ]


def health(ctx: DoubleContext) -> str | None:
    """None when the running double's heartbeat is fresh and its caches are synced."""
    from mochaos.doubles.kruise.heartbeat import check, heartbeat_path

    return check(heartbeat_path(ctx.state_dir))


def prepare(ctx: DoubleContext) -> None:
    """Install our CloneSet/StatefulSet CRDs where nobody else's are."""
    from mochaos.doubles.kruise import crds
    from mochaos.doubles.kruise.api import Api
    from mochaos.doubles.kruise.logs import Log

    api = Api(ctx.kubeconfig)
    try:
        with open(ctx.log_path, "a", encoding="utf-8") as stream:
            crds.ensure(api, Log(stream).with_values(controller="crds"))
    finally:
        api.close()


SPEC = DoubleSpec(
    name="kruise",
    description="OpenKruise CloneSet / Advanced StatefulSet controller double",
    command=command,
    health=health,
    prepare=prepare,
)
