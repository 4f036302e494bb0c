"""What an operator target is, as the plugin and the scenarios use it.

:class:`OperatorTarget` is what ``--operator`` names (installed once per cluster, started
per test namespace); :class:`RunningOperator` is one started operator, with what the
scenario needs of its environment: the pool's template (:class:`PoolSpec`), client
sessions on CNs (:class:`Sessions`), MatrixOne's components made unreachable
(:class:`MatrixOneFaults`) and how long its steps may take (:class:`Waits`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mochaos.cluster.environment import Environment
from mochaos.interpose.proxy import Interposer
from mochaos.kube import Cluster
from mochaos.matrixone.waits import Timings


@dataclass(frozen=True)
class PoolSpec:
    """What a scenario's CNPool needs from the target's environment: a CNSet template,
    the pool's dependencies (LogSet / DNSet) and extra pod labels."""

    template: dict[str, Any]
    deps: dict[str, Any]
    pod_labels: dict[str, str] = field(default_factory=dict)
    max_pods: int | None = None
    """The pool's cap on CN pods (``strategy.scaleStrategy.maxPods``), when it has one."""

    @classmethod
    def of(cls, pool: dict[str, Any]) -> PoolSpec:
        """The spec of a rendered CNPool (:func:`mochaos.matrixone.topology.prepare_namespace`
        returns one): every field the scenario's pool must carry."""
        spec = pool["spec"]
        return cls(
            template=spec["template"],
            deps=spec["deps"],
            pod_labels=spec["podLabels"],
            max_pods=spec["strategy"]["scaleStrategy"]["maxPods"],
        )

    def overlay(self, pool: dict[str, Any]) -> dict[str, Any]:
        """Put this spec's template, deps, pod labels and maxPods onto a scenario's CNPool."""
        import copy

        spec = pool["spec"]
        spec["template"] = copy.deepcopy(self.template)
        spec["deps"] = copy.deepcopy(self.deps)
        spec.setdefault("podLabels", {}).update(self.pod_labels)
        if self.max_pods is not None:
            spec["strategy"]["scaleStrategy"]["maxPods"] = self.max_pods
        return pool


@dataclass(frozen=True)
class Waits:
    """How long (wall seconds) the target may legitimately take for the steps a scenario
    waits on; sized from the target's real intervals (model targets: time-scaled)."""

    pool_ready: float = 90.0
    """A CNPool's idle pods exist and are Idle (pod start, store registration, cache)."""
    bind: float = 90.0
    """A claim is Bound (an Idle pod, or a new pod started for it)."""
    deletion_cost: float = 55.0
    """The CN store controller published a pod's session count as its deletion cost."""
    migration_phase: float = 130.0
    """A migration reaches its next phase (target bound, source draining, reclaimed, done)."""
    log_line: float = 40.0
    """The operator logs an expected line (a reconcile pass)."""
    teardown: float = 30.0
    """A deleted test namespace disappears while the operator still runs (it finalizes
    its objects); after this, mo-chaos releases what is left and reports it."""

    @classmethod
    def of(cls, timings: Timings) -> Waits:
        """The waits on a real MatrixOne (:class:`~mochaos.matrixone.waits.Timings`, from the
        operator's intervals): a claim binds once a new CN started and registered."""
        return cls(
            pool_ready=timings.pool_ready,
            bind=timings.new_cn,
            deletion_cost=timings.deletion_cost,
            migration_phase=timings.migration_phase,
            log_line=timings.log_line,
            teardown=timings.teardown,
        )


class Sessions(Protocol):
    """Client sessions on a CN, as MatrixOne's query service reports them to the operator.

    The platform agent's drain is a CN with open sessions: scenarios hold sessions on a CN
    and release them. Each environment implements it its own way (the model reads an
    annotation, the local MatrixOne double its control API, kind real SQL connections).
    """

    def hold(self, pod: str, n: int) -> int | None:
        """Keep exactly ``n`` sessions on ``pod`` from now on (0 releases them); return the
        resourceVersion of the Kubernetes write it made, if it made one."""
        ...

    def close(self) -> None:
        """Release every session held (idempotent)."""
        ...


class MatrixOneFaults(Protocol):
    """MatrixOne's components (mochaos.ctrl.mo_components) made unreachable to the operator and
    reachable again: how a scenario's MatrixOne fault lands. Each environment does it its
    own way (the local cluster's MatrixOne double through its control interface, the model
    through its fault file, kind by freezing the namespace's log service); none may touch
    more than the test namespace's MatrixOne."""

    components: tuple[str, ...]
    """The components it can take down (``hakeeper``, ``lockservice``, ``query``)."""

    def down(self, component: str, *, how: str) -> str:
        """Make ``component`` unreachable from now on (``how``: refuse or hang); what is
        down, in a few words. Inconclusive when nothing runs there to take down (no CN
        store for the pod): the fault would change nothing the operator sees."""
        ...

    def up(self, component: str) -> None:
        """Make ``component`` reachable again (nothing to do when it is up)."""
        ...


class RunningOperator(Protocol):
    """One started operator target, watching one namespace (or the cluster)."""

    target: str
    version: str
    user_agent: str
    log_path: Path | None
    """The operator's log as mo-chaos keeps it (None when there is none)."""
    pool_spec: PoolSpec | None
    """What the scenario's CNPool needs on this target (None: the model's placeholder)."""
    sessions: Sessions
    waits: Waits
    matrixone: MatrixOneFaults | None
    """MatrixOne's components made unreachable (None: its environment cannot)."""
    interposer: Interposer | None
    """The interposer between the operator and the apiserver (None: it talks to it
    directly); a restart keeps it, a stop ends it."""

    def follow_log(self, stop: threading.Event) -> Iterator[str]:
        """Follow the operator's log from its start, yielding raw lines, until ``stop`` is set."""
        ...

    def stop(self) -> None:
        """Stop the operator (idempotent)."""
        ...

    def restart(self) -> None:
        """Stop and start the operator again, keeping its log."""
        ...

    def pause(self, seconds: float) -> None:
        """Freeze the operator's process for a while; it resumes on its own."""
        ...

    def kill(self) -> None:
        """Kill the operator without a chance to clean up; it stays down."""
        ...


class OperatorTarget(Protocol):
    """What ``--operator`` names: how to install and start an operator.

    A target may also keep test namespaces ready ahead in an attribute ``warm``
    (:class:`mochaos.operator.runtime.warm.WarmNamespaces`): the plugin then hands the test one of
    those, and :meth:`start` finds its operator already running.
    """

    spec: str
    version: str
    images: tuple[str, ...]
    """Container images the cluster's nodes need (loaded by the provider before install)."""
    crds: str
    """Which CRDs the target brings: ``own`` (mo-chaos's schemas) or ``operator``."""
    time_scaled: bool
    """True when the target honours ``--time-scale`` (only the reference model does)."""
    matrixone_components: tuple[str, ...]
    """The MatrixOne components its scenarios can make unreachable (mochaos.ctrl.mo_components;
    ``explore`` offers faults on those only)."""
    environment: Environment
    """What it needs running beside the control plane on the local cluster (its
    ``install`` makes sure it runs; the reference model needs nothing)."""

    def install(self, cluster: Cluster) -> None:
        """Install cluster-wide parts (CRDs, chart) once per cluster."""
        ...

    def start(self, cluster: Cluster, namespace: str, log_dir: Path) -> RunningOperator:
        """Start an operator for one test namespace and wait until it is ready."""
        ...

    def close(self) -> None:
        """Release what :meth:`install` holds for the session (idempotent)."""
        ...
