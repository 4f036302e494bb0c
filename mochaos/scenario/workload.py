"""The workload: the CN pool topology a scenario builds, the platform agent, sessions.

It creates the CNPool and CNClaimSets in the test namespace (in the shape the target's
environment needs), waits until they are ready on the operator's own evidence (pods
Idle, claims Bound), holds client sessions on CNs through the target's
:class:`~mochaos.operator.target.Sessions`, and at the end scales everything to zero: the
epilogue, where cleanup itself is an oracle.
"""

from __future__ import annotations

import random
import time

from mochaos.config import CheckOptions
from mochaos.ctrl.objects import (
    CLAIMSET_LABEL,
    PHASE_LABEL,
    POOL_NAME_LABEL,
    SESSIONS_ANNOTATION,
    deleting,
    labels_of,
)
from mochaos.errors import Inconclusive
from mochaos.observe.history import ActionRecord, History, State
from mochaos.observe.recorder import Recorder
from mochaos.operator.target import RunningOperator
from mochaos.progress import phase
from mochaos.scenario.actions import Actions
from mochaos.scenario.agent import UnitAgent
from mochaos.scenario.predicates import Predicate, claim_bound, named
from mochaos.scenario.topology import cn_claim, cn_claimset, cn_pool
from mochaos.scenario.triggers import Triggers

BIND_REQUEUE = 5.0
"""The operator passes over a claim again this long (operator seconds) after binding it:
Bind ends in ``ErrReSync("wait pod to bound", retryBindInterval)`` (cnclaim/controller.go:
117-118, :46-50 at 2301e3b), and that pass's Sync labels the claim's pod for it again."""
SYNC_QUIET = 2.5
"""A claim whose last pass is this long ago (operator seconds) has no retry pending: longer
than the runtime's 2 s retry after a conflict (reconciler.go:60 of the operator's runtime)."""


class Workload:
    """Topology, agent and sessions of one scenario."""

    def __init__(
        self,
        actions: Actions,
        agent_actions: Actions,
        *,
        recorder: Recorder,
        triggers: Triggers,
        operator: RunningOperator,
        run_id: str,
        rng: random.Random,
        options: CheckOptions,
    ) -> None:
        self.actions = actions
        self._recorder = recorder
        self._triggers = triggers
        self._operator = operator
        self._run_id = run_id
        self.waits = operator.waits
        self._options = options
        self.agent = UnitAgent(agent_actions, recorder, rng=rng, options=options)
        self.claimsets: list[str] = []
        self.claims: list[str] = []

    def pool(self, name: str = "pool", *, max_idle: int = 2) -> str:
        """Create a CNPool keeping ``max_idle`` idle pods; wait until they are Idle."""
        spec = self._operator.pool_spec
        pool = cn_pool(
            name, run_id=self._run_id, max_idle=max_idle
        )  # fmt: skip
        if spec is not None:
            spec.overlay(pool)
        with phase(f"topology: pool {name}"):
            self.actions.create(pool)
            self._triggers.wait(
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
            self.actions.create(
                cn_claimset(name, run_id=self._run_id, replicas=replicas, pool=pool)
            )
            self.claimsets.append(name)
            return self.bound_claims(name, replicas) if wait else []

    def claim(self, name: str, *, pool: str = "pool", wait_bound: bool = True) -> str:
        """Create a standalone CNClaim (no claim set); by default wait until it is Bound."""
        self.actions.create(cn_claim(name, run_id=self._run_id, pool=pool))
        self.claims.append(name)
        if wait_bound:
            self._triggers.wait(claim_bound(name), timeout=self.waits.bind)
        return name

    def idle_pods(self, pool: str = "pool", *, at_least: int = 1) -> list[str]:
        """Wait until the pool has ``at_least`` Idle pods; return the Idle pods' names."""
        self._triggers.wait(
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
        self._triggers.wait(
            named(f"{n} Bound claims in claim set {claimset}",
                  lambda s: len(bound_of(s, claimset)) >= n),
            timeout=self.waits.bind,
        )  # fmt: skip
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
        record = self.actions.record(
            "set_sessions", "Pod", pod, params={"sessions": sessions}, write_rv=rv,
            component="agent",
        )  # fmt: skip
        self.actions.annotate_pod(pod, annotations={SESSIONS_ANNOTATION: str(sessions)})
        return record

    def scale_to_zero(self) -> None:
        """The epilogue's writes: every claim set to 0, every standalone claim deleted."""
        self.agent.stop()
        for cs in self.claimsets:
            self.actions.scale_claimset(cs, replicas=0)
        for claim in self.claims:
            if self._recorder.snapshot().get("CNClaim", claim) is not None:
                self.actions.delete_claim(claim)


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


def idle_pods_at_least(pool: str, n: int) -> Predicate:
    """At least ``n`` live pods of ``pool`` are Idle."""

    def check(s: State) -> bool:
        idle = [
            p
            for p in s.all("Pod").values()
            if labels_of(p).get(POOL_NAME_LABEL) == pool
            and labels_of(p).get(PHASE_LABEL) == "Idle"
            and not deleting(p)
        ]
        return len(idle) >= n

    return named(f"{n} Idle pods in pool {pool}", check)


def bound_of(state: State, claimset: str) -> list[str]:
    """Live claims of ``claimset`` that are Bound to a pod."""
    return [
        name
        for name, c in state.all("CNClaim").items()
        if labels_of(c).get(CLAIMSET_LABEL) == claimset
        and not deleting(c)
        and (c.get("status") or {}).get("phase") == "Bound"
        and (c.get("spec") or {}).get("podName")
    ]


def bound_pods(state: State) -> list[str]:
    """Pods in pool phase Bound."""
    return [n for n, p in state.all("Pod").items() if labels_of(p).get(PHASE_LABEL) == "Bound"]


def _pod_age_key(state: State, claim: str) -> tuple[str, str]:
    pod = ((state.get("CNClaim", claim) or {}).get("spec") or {}).get("podName", "")
    created = ((state.get("Pod", pod) or {}).get("metadata") or {}).get("creationTimestamp", "")
    return created, claim
