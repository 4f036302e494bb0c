"""``binary:<path>``: a real operator manager binary, run per test namespace.

The binary is a manager built from a matrixone-operator checkout (``CGO_ENABLED=0 go
build ./cmd/operator``). Its CRDs come from ``--operator-crds <dir>`` (a checkout, or
its ``deploy/crds``); everything else is as for ``source:`` (see
:mod:`mochaos.operator.targets.local_manager`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mochaos.errors import UsageError
from mochaos.operator.targets.local_manager import (
    READY_TIMEOUT,
    ManagerTarget,
    binary_version,
    operator_crds_dir,
    require_local,
)


def from_spec(value: str, options: dict[str, Any]) -> ManagerTarget:
    """``binary:<path>`` with ``--operator-crds <dir>``."""
    if not value:
        raise UsageError("binary: target needs a path", hint="use --operator=binary:/path")
    require_local(options, "binary")
    path = Path(value).expanduser()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise UsageError(
            f"operator binary {path} is not an executable file",
            hint="build it in a checkout (CGO_ENABLED=0 go build ./cmd/operator), or use "
            "--operator=source:<checkout>",
        )
    crds = operator_crds_dir(options, "binary: needs the operator's CRDs")
    path = path.resolve()
    return ManagerTarget(
        spec=f"binary:{value}", version=binary_version(path), crd_root=crds,
        crd_source=f"operator CRDs from {crds}", binary=path,
        ready_timeout=float(options.get("operator_ready_timeout") or READY_TIMEOUT),
        warm=int(options.get("warm_namespaces", 0)),
        run_id=str(options.get("run_id", "")),
        interposer=str(options.get("interposer") or "on"),
    )  # fmt: skip
