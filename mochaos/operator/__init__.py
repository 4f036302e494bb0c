"""Operator targets: what ``--operator`` names, in one registry.

A target is a module with a ``from_spec(value, options)`` factory returning an
:class:`~mochaos.operator.target.OperatorTarget`; adding a target is one module and one
line in :data:`REGISTRY`. Factories only validate their input (no cluster, no
build; ``image:`` on the local cluster asks the Docker engine for its version):
:func:`parse_target` is safe to call while pytest configures, so a bad ``--operator``
stops the run before any test.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mochaos.errors import UsageError
from mochaos.operator.target import OperatorTarget


@dataclass(frozen=True)
class Scheme:
    """One kind of operator target."""

    name: str
    usage: str
    factory: str
    """``module:function`` building the target from the text after ``<name>:``."""
    summary: str
    local: str | None = None
    """The factory on the local cluster, when it differs from ``factory`` (which serves the
    other providers)."""


REGISTRY: dict[str, Scheme] = {
    s.name: s
    for s in (
        Scheme("model", "model:<profile>", "mochaos.operator.targets.model:from_spec",
               "the reference model of the operator (a Python controller)"),
        Scheme("source", "source:<checkout or git URL>[@<rev>]",
               "mochaos.operator.targets.chart:from_source",
               "the real manager built from a matrixone-operator checkout or repository "
               "(local: a process; kind: its image and the checkout's chart)",
               local="mochaos.operator.targets.source:from_spec"),
        Scheme("binary", "binary:<path>", "mochaos.operator.targets.binary:from_spec",
               "a real manager binary run as a process"),
        Scheme("image", "image:<repository>:<tag>", "mochaos.operator.targets.chart:from_spec",
               "the real operator image (kind/existing: Helm chart; local: Docker containers "
               "with the host's network)", local="mochaos.operator.targets.container:from_spec"),
        Scheme("installed", "installed", "mochaos.operator.targets.installed:from_spec",
               "an operator already running in the cluster (existing provider)"),
    )
}  # fmt: skip


def usage() -> str:
    """The accepted forms of ``--operator``, for messages."""
    return ", ".join(s.usage for s in REGISTRY.values())


def parse_target(spec: str, options: dict[str, Any] | None = None) -> OperatorTarget:
    """Turn an ``--operator`` value into a target; UsageError (one line) for anything wrong.

    ``options`` are the run's target settings (:meth:`mochaos.config.RunConfig.target_options`);
    their ``cluster`` (default ``local``) picks a scheme's local factory.
    A target that does not honour the time scale refuses one other than 1.
    """
    opts = dict(options or {})
    name, _, value = spec.partition(":")
    scheme = REGISTRY.get(name)
    if scheme is None:
        raise UsageError(f"unknown operator target {spec!r}", hint=f"use {usage()}")
    target = _factory(scheme, str(opts.get("cluster") or "local"))(value, opts)
    scale = float(opts.get("time_scale") or 1.0)
    if scale != 1.0 and not target.time_scaled:
        raise UsageError(
            f"--time-scale {scale:g} cannot apply to {spec}: the real manager's intervals are "
            "compiled in",
            hint="drop --time-scale (it applies to model: targets only)",
        )
    return target


def _factory(scheme: Scheme, cluster: str) -> Callable[[str, dict[str, Any]], OperatorTarget]:
    chosen = scheme.local if cluster == "local" and scheme.local else scheme.factory
    module, _, func = chosen.partition(":")
    return getattr(importlib.import_module(module), func)  # type: ignore[no-any-return]


__all__ = ["REGISTRY", "Scheme", "parse_target", "usage"]
