"""``source:<checkout>[@<rev>]``: the real manager built from a matrixone-operator checkout.

The checkout (a work tree, a git directory with ``@<rev>``, or a git URL with an
optional ``@<rev>``, mirrored by :mod:`~mochaos.operator.provenance.git_source`) is built once per
commit into mo-chaos's cache (:mod:`~mochaos.operator.provenance.manager_build`), with progress
per step; its CRDs come from the same checkout. Everything else is as for
``binary:`` (see :mod:`mochaos.operator.targets.local_manager`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from mochaos.operator.provenance import checkout as co
from mochaos.operator.provenance import git_source
from mochaos.operator.provenance.manager_build import build_manager
from mochaos.operator.targets.local_manager import READY_TIMEOUT, ManagerTarget, require_local

ENV_SOURCE = "MOCHAOS_OPERATOR_SRC"
"""Where the framework's own real-operator tests find a checkout (unset: they skip)."""


def from_spec(value: str, options: dict[str, Any]) -> ManagerTarget:
    """``source:<dir>[@<rev>]`` or ``source:<git URL>[@<rev>]``: the revision found now (a URL's
    fetched when the mirror lacks it), exported and built at install."""
    require_local(options, "source")
    if git_source.is_url(value):
        url, ref = git_source.parse(value)
        run_id = options.get("run_id")
        found = git_source.identify(url, ref, run_id=run_id)
        tree: Callable[[], co.Checkout] = partial(git_source.resolve, url, ref, run_id=run_id)
    else:
        path, rev = co.parse_source(value)
        found = co.identify(path, rev)
        tree = partial(co.resolve, path, rev)
    return ManagerTarget(
        spec=f"source:{value}",
        version=f"matrixone-operator@{found.describe}",
        crd_root=found.path,
        crd_source=f"matrixone-operator {found.describe}",
        build=lambda: build_manager(tree()),
        ready_timeout=float(options.get("operator_ready_timeout") or READY_TIMEOUT),
        warm=int(options.get("warm_namespaces", 0)),
        run_id=str(options.get("run_id", "")),
        interposer=str(options.get("interposer") or "on"),
    )
