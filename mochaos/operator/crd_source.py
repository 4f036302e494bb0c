"""Where the CNClaim / CNClaimSet / CNPool CRDs come from.

The real operator's manifests live in its Go module (``deploy/crds/``). We ask
the Go module proxy for that module at a pinned version and cache the three
files; when the proxy does not serve it (true on our build machines: it answers
403 for github.com/matrixorigin/matrixone-operator), we fall back to our own
minimal schemas in ``mochaos/operator/schemas/`` (labelled ``mochaos.io/schema:
own``), written from OPERATOR-BEHAVIOUR.md §13. Nothing is vendored.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from mochaos.paths import cache_dir

OPERATOR_MODULE = "github.com/matrixorigin/matrixone-operator"
DEFAULT_OPERATOR_VERSION = "v1.3.0"
CRD_FILES = {
    "cnclaims": "core.matrixorigin.io_cnclaims.yaml",
    "cnclaimsets": "core.matrixorigin.io_cnclaimsets.yaml",
    "cnpools": "core.matrixorigin.io_cnpools.yaml",
}
_OWN_DIR = Path(__file__).with_name("schemas")


def own_crds() -> list[dict[str, Any]]:
    """Our own minimal CRDs for the three claim kinds."""
    return [yaml.safe_load((_OWN_DIR / f"{plural}.yaml").read_text()) for plural in CRD_FILES]


def load_module_crds(module_dir: Path) -> list[dict[str, Any]] | None:
    """The three CRDs from an unpacked operator module, or None when any is missing."""
    docs = []
    for name in CRD_FILES.values():
        path = module_dir / "deploy" / "crds" / name
        if not path.is_file():
            return None
        docs.append(yaml.safe_load(path.read_text()))
    return docs


def _download_module(version: str, timeout: float = 60.0) -> Path | None:
    """Ask the Go module proxy for the operator module; None when unavailable."""
    go = shutil.which("go")
    if go is None:
        return None
    try:
        out = subprocess.run(
            [go, "mod", "download", "-json", f"{OPERATOR_MODULE}@{version}"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, "GOFLAGS": "-mod=mod", "GOWORK": "off"},
            cwd="/",
        )
        info = json.loads(out.stdout or "{}")
    except (subprocess.TimeoutExpired, json.JSONDecodeError, OSError):
        return None
    if info.get("Error") or not info.get("Dir"):
        return None
    return Path(info["Dir"])


@cache
def crds(version: str = DEFAULT_OPERATOR_VERSION) -> tuple[str, list[dict[str, Any]]]:
    """CRDs for CNClaim, CNClaimSet and CNPool, and where they came from.

    Returns ``(source, documents)`` where source is ``module:<version>`` when the
    operator's own manifests were used, or ``own`` for our minimal schemas.
    """
    cached = cache_dir() / "crds" / version
    if cached.is_dir():
        docs = load_module_crds(cached)
        if docs:
            return f"module:{version}", docs
    module_dir = _download_module(version)
    if module_dir is not None:
        docs = load_module_crds(module_dir)
        if docs:
            target = cached / "deploy" / "crds"
            target.mkdir(parents=True, exist_ok=True)
            for name in CRD_FILES.values():
                shutil.copyfile(module_dir / "deploy" / "crds" / name, target / name)
            return f"module:{version}", docs
        print(
            f"mo-chaos: {OPERATOR_MODULE}@{version} has no deploy/crds; using own CRDs",
            file=sys.stderr,
        )
    return "own", own_crds()
