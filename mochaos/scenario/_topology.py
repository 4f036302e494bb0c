"""The CN pool topology a scenario builds, and the client sessions it holds on CNs.

It creates the CNPool, CNClaimSets and CNClaims in the test namespace (plain dicts in the
operator's API shape, docs/operator-behaviour.md §13, overlaid with what the target's
environment needs), waits until they are ready on the operator's own evidence (pods Idle,
claims Bound), holds client sessions on CNs through the target's
:class:`~mochaos.operator.target.Sessions`, and at the end scales everything to zero: the
epilogue, where cleanup itself is an oracle. Every object — and through ``podLabels`` every
pool pod, and through the claim template every claim — carries the run's
``mochaos.io/run-id`` label.
"""

from __future__ import annotations

import time
from typing import Any

from mochaos import faults
from mochaos.config import CheckOptions
from mochaos.ctrl.objects import (
    API_VERSION,
    CLAIMSET_LABEL,
    PHASE_LABEL,
    POOL_NAME_LABEL,
    RUN_ID_LABEL,
    SESSIONS_ANNOTATION,
    deleting,
    labels_of,
)
from mochaos.errors import Inconclusive
from mochaos.observe.history import ActionRecord, History, State
from mochaos.observe.recorder import Recorder
from mochaos.operator.target import RunningOperator
from mochaos.progress import phase
from mochaos.scenario._predicates import (
    bound_claims_at_least,
    bound_of,
    claim_bound,
    idle_pods_at_least,
)
from mochaos.scenario._triggers import Triggers
from mochaos.scenario._writes import Writes

BIND_REQUEUE = 5.0
"""The operator passes over a claim again this long (operator seconds) after binding it:
Bind ends in ``ErrReSync("wait pod to bound", retryBindInterval)`` (cnclaim/controller.go:
117-118, :46-50 at 2301e3b), and that pass's Sync labels the claim's pod for it again."""
SYNC_QUIET = 2.5
"""A claim whose last pass is this long ago (operator seconds) has no retry pending: longer
than the runtime's 2 s retry after a conflict (reconciler.go:60 of the operator's runtime)."""


class Topology:
    """The pool, claim sets, claims and sessions of one scenario."""

    def __init__(
        self,
        writes: Writes,
        *,
        recorder: Recorder,
        triggers: Triggers,
        operator: RunningOperator,
        run_id: str,
        options: CheckOptions,
    ) -> None:
        self._writes = writes
        self._recorder = recorder
        self._triggers = triggers
        self._operator = operator
        self._run_id = run_id
        self.waits = operator.waits
        self._options = options
        self.claimsets: list[str] = []
        self.claims: list[str] = []
        self._sessions: dict[str, int] = {}
        """The client sessions the scenario holds, by CN pod (:meth:`set_sessions`)."""

    def pool(self, name: str = "pool", *, max_idle: int = 2) -> str:
        """Create a CNPool keeping ``max_idle`` idle pods; wait until they are Idle."""
        spec = self._operator.pool_spec
        pool = cn_pool(name, run_id=self._run_id, max_idle=max_idle)
        if spec is not None:
            spec.overlay(pool)
        with phase(f"topology: pool {name}"):
            self._writes.create(pool)
            self._triggers.when(
                idle_pods_at_least(name, max_idle), timeout=self.waits.pool_ready,
                what=f"{max_idle} Idle pods in pool {name}",
            )  # fmt: skip
        return name

    def claimset(
        self, name: str, *, replicas: int, pool: str = "pool", wait: bool = True
    ) -> list[str]:
        """Create a CNClaimSet; by default wait until ``replicas`` of its claims are Bound
        (without waiting: [] — call :meth:`bound_claims` later, e.g. after creating others)."""
        with phase(f"topology: claim set {name}"):
            self._writes.create(
                cn_claimset(name, run_id=self._run_id, replicas=replicas, pool=pool)
            )
            self.claimsets.append(name)
            return self.bound_claims(name, replicas) if wait else []

    def claim(self, name: str, *, pool: str = "pool", wait_bound: bool = True) -> str:
        """Create a standalone CNClaim (no claim set); by default wait until it is Bound."""
        self._writes.create(cn_claim(name, run_id=self._run_id, pool=pool))
        self.claims.append(name)
        if wait_bound:
            self._triggers.when(claim_bound(name), timeout=self.waits.bind)
        return name

    def idle_pods(self, pool: str = "pool", *, at_least: int = 1) -> list[str]:
        """Wait until the pool has ``at_least`` Idle pods; return the Idle pods' names."""
        self._triggers.when(
            idle_pods_at_least(pool, at_least), timeout=self.waits.pool_ready,
            what=f"{at_least} Idle pods in pool {pool}",
        )  # fmt: skip
        state = self._recorder.snapshot()
        return sorted(
            n for n, p in state.all("Pod").items()
            if labels_of(p).get(PHASE_LABEL) == "Idle" and not deleting(p)
        )  # fmt: skip

    def bound_claims(self, claimset: str, n: int) -> list[str]:
        """Wait until ``n`` live claims of the set are Bound; names ordered by their pod's age."""
        self._triggers.when(bound_claims_at_least(claimset, n), timeout=self.waits.bind)
        state = self._recorder.snapshot()
        return sorted(bound_of(state, claimset), key=lambda c: _pod_age_key(state, c))

    def settled(self, claims: list[str]) -> None:
        """Wait until the operator is done with the passes that follow each claim's bind, on
        its own log: :data:`BIND_REQUEUE` and :data:`SYNC_QUIET` have passed since the bind
        (the requeue's pass, if any, has come) and the claim's last pass is
        :data:`SYNC_QUIET` ago. A fault then lands on claims bound a while ago, as
        in production, not in the seconds where such a pass would still relabel a claim's
        pod for it."""
        requeue, quiet = self._options.scaled(BIND_REQUEUE), self._options.scaled(SYNC_QUIET)
        deadline = time.monotonic() + self.waits.bind
        with phase("waiting for the operator's passes after the binds"):
            while True:
                now, history = time.time(), self._recorder.history()
                bound_by, last_by = now - requeue - quiet, now - quiet
                busy = [c for c in claims if not _settled(history, c, bound_by, last_by)]
                if not busy:
                    return
                if time.monotonic() > deadline:
                    raise Inconclusive(
                        f"the operator kept passing over claim(s) {', '.join(busy)} for "
                        f"{self.waits.bind:.0f}s after binding them"
                    )
                self._recorder.wait_for_entry(lambda e: False, timeout=min(quiet, 0.25))

    def pod_of(self, claim: str) -> str:
        """The pod a claim's spec names right now."""
        obj = self._recorder.snapshot().get("CNClaim", claim) or {}
        pod = (obj.get("spec") or {}).get("podName")
        if not pod:
            raise Inconclusive(f"claim {claim} names no pod")
        return pod

    def set_sessions(self, pod: str, sessions: int) -> ActionRecord:
        """Hold ``sessions`` client sessions on a CN (MatrixOne's view, per environment),
        then say so on the pod.

        The operator's store controller reads a CN's sessions on its 30 s resync or when
        its watch passes a pod change, e.g. a new annotation other than its own stats
        (cnstore/controller.go:697-715 at 2301e3b): the ``mochaos.io/sessions`` annotation
        has it publish the deletion cost within a second instead of up to 30 s later.
        """
        rv = self._operator.sessions.hold(pod, sessions)
        self._sessions[pod] = sessions
        record = self._writes.record(
            "set_sessions", "Pod", pod, params={"sessions": sessions}, write_rv=rv
        )
        self._writes.annotate_pod(pod, {SESSIONS_ANNOTATION: str(sessions)})
        return record

    def release_sessions(self) -> list[str]:
        """Close the client sessions the scenario still holds on pods that still exist, as
        :meth:`set_sessions` to 0 (recorded); the pods. A scenario cut short leaves the
        sessions its body would have closed, and a drain waiting on them is then ours, not
        the operator's doing."""
        held = [pod for pod, n in self._sessions.items() if n > 0]
        live = [pod for pod in held if self._recorder.snapshot().get("Pod", pod) is not None]
        for pod in live:
            self.set_sessions(pod, 0)
        self._sessions = {pod: n for pod, n in self._sessions.items() if pod not in held}
        return live

    def scale(self, claimset: str, *, replicas: int) -> ActionRecord:
        """Scale a claim set as the workload does (not a fault: no trigger, no gate)."""
        return self._writes.as_workload(faults.scale_claimset, claimset, replicas=replicas)

    def scale_to_zero(self) -> None:
        """The epilogue's writes: every claim set to 0, every standalone claim deleted (one
        already gone is no surprise)."""
        for cs in self.claimsets:
            self._writes.as_workload(faults.scale_claimset, cs, replicas=0, tolerate=(404,))
        for claim in self.claims:
            if self._recorder.snapshot().get("CNClaim", claim) is not None:
                self._writes.as_workload(faults.delete_claim, claim, tolerate=(404,))


def _settled(history: History, claim: str, bound_by: float, last_by: float) -> bool:
    """``claim`` was Bound by ``bound_by`` and the operator's last record of it is no later
    than ``last_by`` (wall times)."""
    bound = next(
        (c.t for c in history.changes("CNClaim")
         if c.name == claim and (c.obj.get("status") or {}).get("phase") == "Bound"),
        None,
    )  # fmt: skip
    if bound is None or bound > bound_by:
        return False
    last = max((r.t for r in history.logs() if r.name == claim), default=bound)
    return last <= last_by


def _pod_age_key(state: State, claim: str) -> tuple[str, str]:
    pod = ((state.get("CNClaim", claim) or {}).get("spec") or {}).get("podName", "")
    created = ((state.get("Pod", pod) or {}).get("metadata") or {}).get("creationTimestamp", "")
    return created, claim


def cn_pool(name: str, *, run_id: str, max_idle: int) -> dict[str, Any]:
    """A CNPool keeping ``max_idle`` idle CN pods; a real cluster's target overlays its
    template, deps, pod labels and maxPods (mochaos.matrixone.topology.PoolSpec)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "CNPool",
        "metadata": {"name": name, "labels": {RUN_ID_LABEL: run_id}},
        "spec": {
            "template": {"image": "matrixorigin/matrixone:mochaos-model"},
            "podLabels": {RUN_ID_LABEL: run_id},
            "deps": {"logSet": {"metadata": {"name": "mochaos"}}},
            "strategy": {"updateStrategy": {}, "scaleStrategy": {"maxIdle": max_idle}},
        },
    }


def cn_claimset(name: str, *, run_id: str, replicas: int, pool: str) -> dict[str, Any]:
    """A CNClaimSet of ``replicas`` claims that bind pods of ``pool``."""
    return {
        "apiVersion": API_VERSION,
        "kind": "CNClaimSet",
        "metadata": {"name": name, "labels": {RUN_ID_LABEL: run_id}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {CLAIMSET_LABEL: name}},
            "template": {
                "metadata": {
                    "labels": {RUN_ID_LABEL: run_id, CLAIMSET_LABEL: name, POOL_NAME_LABEL: pool}
                },
                "spec": {
                    "selector": {"matchLabels": {POOL_NAME_LABEL: pool}},
                    "poolName": pool,
                },
            },
        },
    }


def cn_claim(name: str, *, run_id: str, pool: str) -> dict[str, Any]:
    """A standalone CNClaim (no claim set) for a pod of ``pool``."""
    return {
        "apiVersion": API_VERSION,
        "kind": "CNClaim",
        "metadata": {"name": name, "labels": {RUN_ID_LABEL: run_id, POOL_NAME_LABEL: pool}},
        "spec": {"selector": {"matchLabels": {POOL_NAME_LABEL: pool}}, "poolName": pool},
    }
