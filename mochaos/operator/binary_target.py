"""``binary:<path>``: a real operator binary run as a process per test namespace.

The binary finds the cluster through ``KUBECONFIG`` and its namespace through
``WATCH_NAMESPACE``; it counts as ready once its log shows controller-runtime's
"Starting workers" line. ``MOCHAOS_OPERATOR_READY_TIMEOUT`` (seconds) bounds the wait.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mochaos.errors import UsageError
from mochaos.operator.install import apply_crds
from mochaos.operator.process import OperatorProcess
from mochaos.types import Cluster

READY_LINE = "Starting workers"
READY_TIMEOUT_ENV = "MOCHAOS_OPERATOR_READY_TIMEOUT"
DEFAULT_READY_TIMEOUT = 60.0


def _ready_timeout() -> float:
    raw = os.environ.get(READY_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_READY_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise UsageError(
            f"{READY_TIMEOUT_ENV}={raw!r} is not a positive number of seconds",
            hint=f"e.g. {READY_TIMEOUT_ENV}=60, or unset it",
        )
    return value


class BinaryTarget:
    """Installs our CRDs and runs the binary once per test namespace."""

    def __init__(self, *, path: Path) -> None:
        path = path.expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            raise UsageError(
                f"operator binary {path} is not an executable file",
                hint="build the operator (go build ./cmd/...) and pass --operator=binary:<path>",
            )
        self.path = path.resolve()
        self.spec = f"binary:{path}"
        self.version = f"binary-{self.path.name}"
        self.ready_timeout = _ready_timeout()

    def install(self, cluster: Cluster) -> None:
        """Apply the CNClaim / CNClaimSet / CNPool CRDs (idempotent)."""
        apply_crds(cluster)

    def start(self, cluster: Cluster, namespace: str, log_dir: Path) -> OperatorProcess:
        """Start the binary for one namespace and wait for its "Starting workers" line."""
        env = dict(os.environ, KUBECONFIG=str(cluster.kubeconfig), WATCH_NAMESPACE=namespace)
        log_path = log_dir / "operator.log"
        proc = OperatorProcess(
            target=self.spec,
            version=self.version,
            user_agent=self.path.name,
            command=[str(self.path)],
            log_path=log_path,
            ready=lambda p: READY_LINE in p.log_tail(200),
            env=env,
            ready_timeout=self.ready_timeout,
        )
        proc.start()
        return proc


def from_spec(value: str, options: dict[str, Any]) -> BinaryTarget:
    """``binary:<path>``."""
    if not value:
        raise UsageError("binary: target needs a path", hint="use --operator=binary:/path")
    return BinaryTarget(path=Path(value))
