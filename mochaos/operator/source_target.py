"""``source:<checkout>[@<rev>]``: the real manager built from a matrixone-operator checkout.

The checkout (a work tree, or a git directory with ``@<rev>``) is built once per
commit into mo-chaos's cache (:mod:`~mochaos.operator.manager_build`), with progress
per step; its CRDs come from the same checkout. Everything else is as for
``binary:`` (see :mod:`mochaos.operator.manager_target`).
"""

from __future__ import annotations

from typing import Any

from mochaos.operator import checkout as co
from mochaos.operator.manager_build import build_manager
from mochaos.operator.manager_target import READY_TIMEOUT, ManagerTarget, require_local

ENV_SOURCE = "MOCHAOS_OPERATOR_SRC"
"""Where the framework's own real-operator tests find a checkout (unset: they skip)."""


def from_spec(value: str, options: dict[str, Any]) -> ManagerTarget:
    """``source:<dir>[@<rev>]``: validated now, resolved and built at install."""
    require_local(options, "source")
    path, rev = co.parse_source(value)
    found = co.identify(path, rev)
    return ManagerTarget(
        spec=f"source:{value}",
        version=f"matrixone-operator@{found.describe}",
        crd_root=found.path,
        crd_source=f"matrixone-operator {found.describe}",
        build=lambda: build_manager(co.resolve(path, rev)),
        ready_timeout=float(options.get("operator_ready_timeout") or READY_TIMEOUT),
        warm=int(options.get("warm_namespaces", 0)),
        run_id=str(options.get("run_id", "")),
    )
