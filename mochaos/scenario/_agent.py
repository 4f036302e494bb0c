"""Emulation of MatrixOne's platform agent (unit-agent) as far as migrations go.

The agent asks for a migration with one merge patch of the claim spec
(``sourcePod`` = the current pod, ``podName``/``nodeName`` = the target), and
keeps re-sending it every 5 s until the migration completes or the claim is
gone — in production it kept patching a deleting claim for 16 minutes
(docs/operator-behaviour.md §11.1). It picks targets from its own view of the pool, which may be
stale: that is how the incident's double reference arose.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

from mochaos.config import CheckOptions
from mochaos.ctrl.objects import PHASE_LABEL, POOL_NAME_LABEL, deleting, labels_of
from mochaos.errors import Inconclusive
from mochaos.observe.history import ActionRecord, State
from mochaos.observe.recorder import Recorder
from mochaos.scenario._predicates import claim_spec, migration_complete
from mochaos.scenario._writes import ANY_REFUSAL, Writes

RETRY_INTERVAL = 5.0
"""The agent's migration retry period (seconds of operator time)."""

REQUEST_ANNOTATION = "mochaos.io/migration-request"
"""Numbers each request, so every retry is a real write: it re-enqueues the claim in the
operator (as production's retries did, docs/operator-behaviour.md §11.1) and its
resourceVersion is ours alone."""


@dataclass
class Migration:
    """One requested migration and its retry loop."""

    claim: str
    source: str
    target: str
    patch: dict
    first: ActionRecord
    attempts: int = 1
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None


class UnitAgent:
    """Sends migration requests like the platform agent, with its 5 s retry loop."""

    def __init__(
        self,
        writes: Writes,
        recorder: Recorder,
        *,
        rng: random.Random,
        options: CheckOptions | None = None,
    ) -> None:
        self._writes = writes
        self._recorder = recorder
        self._rng = rng
        self.retry_interval = (options or CheckOptions()).scaled(RETRY_INTERVAL)
        self.migrations: list[Migration] = []

    def pick_target(self, claim: str, *, state: State | None = None) -> str:
        """An Idle pod of the claim's pool, chosen with the run's seeded RNG."""
        state = state or self._recorder.snapshot()
        current = claim_spec(state, claim).get("podName")
        pool = claim_spec(state, claim).get("poolName")
        idle = sorted(
            name
            for name, pod in state.all("Pod").items()
            if name != current
            and labels_of(pod).get(PHASE_LABEL) == "Idle"
            and (not pool or labels_of(pod).get(POOL_NAME_LABEL) == pool)
            and not deleting(pod)
        )
        if not idle:
            raise Inconclusive(f"agent: no Idle pod to migrate claim {claim} onto")
        return self._rng.choice(idle)

    def request_migration(
        self, claim: str, *, target: str | None = None, trigger: object = None
    ) -> Migration:
        """Patch the claim to migrate onto ``target`` (or a picked Idle pod) and keep retrying.

        The first patch is a gated write like any fault (``trigger``: what ``sc.when``
        returned): it must land while the trigger holds, and a refusal makes the scenario
        inconclusive; the retries are the agent's own and may be refused (the claim deleting)."""
        state = self._recorder.snapshot()
        spec = claim_spec(state, claim)
        source = spec.get("podName")
        if not source:
            raise Inconclusive(f"agent: claim {claim} has no pod to migrate from")
        target = target or self.pick_target(claim, state=state)
        source_pod = state.get("Pod", source) or {}
        target_pod = state.get("Pod", target) or {}
        patch = {
            "sourcePod": {
                "podName": source,
                "nodeName": spec.get("nodeName") or (source_pod.get("spec") or {}).get("nodeName"),
            },
            "podName": target,
            "nodeName": (target_pod.get("spec") or {}).get("nodeName", ""),
        }
        first = self._send(claim, patch, source, target, attempt=1, trigger=trigger, tolerate=())
        mig = Migration(claim=claim, source=source, target=target, patch=patch, first=first)
        mig.thread = threading.Thread(
            target=self._retry_loop, args=(mig,), name=f"agent-{claim}", daemon=True
        )
        mig.thread.start()
        self.migrations.append(mig)
        return mig

    def _send(
        self, claim: str, patch: dict, source: str, target: str, *, attempt: int,
        trigger: object = None, tolerate: range | tuple[int, ...] = ANY_REFUSAL,
    ) -> ActionRecord:  # fmt: skip
        return self._writes.patch_claim_spec(
            claim,
            patch,
            action="request_migration",
            params={"source": source, "target": target, "attempt": attempt},
            annotations={REQUEST_ANNOTATION: str(attempt)},
            trigger=trigger,
            tolerate=tolerate,
        )

    def _retry_loop(self, mig: Migration) -> None:
        done = migration_complete(mig.claim, mig.target)
        while not mig.stop.wait(self.retry_interval):
            state = self._recorder.snapshot()
            claim = state.get("CNClaim", mig.claim)
            if claim is None or done(state):
                return
            mig.attempts += 1
            self._send(mig.claim, mig.patch, mig.source, mig.target, attempt=mig.attempts)

    def stop(self) -> None:
        """Stop every retry loop."""
        for mig in self.migrations:
            mig.stop.set()
        for mig in self.migrations:
            if mig.thread is not None:
                mig.thread.join(timeout=5)


def source_of(state: State, claim: str) -> str | None:
    """The pod a claim is migrating away from (None when not migrating)."""
    return (claim_spec(state, claim).get("sourcePod") or {}).get("podName")
