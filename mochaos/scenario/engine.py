"""The scenario engine: one :class:`Scenario` per test, composed of three parts.

- the workload (:mod:`~mochaos.scenario.workload`): pool, claim sets, the platform
  agent, client sessions;
- the nemesis (:mod:`~mochaos.scenario.nemesis`): faults, each gated on observed
  state and proven to have landed while its trigger held;
- the checker (:mod:`~mochaos.scenario.checker`): invariants watched during the run,
  settle, epilogue, verdict.

Suites drive a Scenario: build the topology, wait on the recorder for the state they
want (never a bare sleep), inject the fault, settle, run the epilogue (every claim
set to 0: cleanup as an oracle) and ask for the verdict.
"""

from __future__ import annotations

import random

import pytest

from mochaos.errors import Inconclusive, InfraError
from mochaos.kube import Cluster, new_api_client
from mochaos.observe.history import ActionRecord
from mochaos.observe.recorder import Recorder
from mochaos.operator.target import RunningOperator, Waits
from mochaos.progress import phase
from mochaos.report.result import ScenarioResult
from mochaos.scenario.actions import Actions, Fired
from mochaos.scenario.checker import Checker, Detection, RunInfo, failure_message
from mochaos.scenario.describe import describe_state
from mochaos.scenario.nemesis import Nemesis
from mochaos.scenario.predicates import Predicate
from mochaos.scenario.triggers import Triggers
from mochaos.scenario.workload import Workload, bound_pods


class Scenario:
    """One chaos scenario in one namespace; see the module docstring."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        namespace: str,
        recorder: Recorder,
        operator: RunningOperator,
        run: RunInfo,
        nodeid: str = "",
    ) -> None:
        self.namespace = namespace
        self.recorder = recorder
        self.operator = operator
        self.run = run
        self.options = run.options
        self.nodeid = nodeid
        self._apis = [
            new_api_client(cluster.kubeconfig, user_agent=agent, context=cluster.context)
            for agent in ("mochaos/chaos", "mochaos/agent")
        ]
        self.actions = Actions(
            self._apis[0], namespace=namespace, run_id=run.run_id, recorder=recorder,
            operator=operator,
        )  # fmt: skip
        agent_actions = Actions(
            self._apis[1], namespace=namespace, run_id=run.run_id, recorder=recorder,
            operator=None,
        )  # fmt: skip
        self.triggers = Triggers(recorder)
        self.workload = Workload(
            self.actions, agent_actions, recorder=recorder, triggers=self.triggers,
            operator=operator, run_id=run.run_id, rng=random.Random(run.seed),
            options=run.options,
        )  # fmt: skip
        self.nemesis = Nemesis(self.actions, recorder)
        self.checker = Checker(
            recorder, run, namespace=namespace, operator_user_agent=operator.user_agent
        )
        self.result: ScenarioResult | None = None
        recorder.mark("scenario")

    # -- the parts' vocabulary, as suites use it ----------------------------------

    @property
    def waits(self) -> Waits:
        """How long the target may take for each step (its real intervals)."""
        return self.operator.waits

    @property
    def agent(self):
        """The platform agent (migration requests and their retries)."""
        return self.workload.agent

    def pool(self, name: str = "pool", *, max_idle: int = 2) -> str:
        """See :meth:`Workload.pool`."""
        return self.workload.pool(name, max_idle=max_idle)

    def claimset(
        self, name: str, *, replicas: int, pool: str = "pool", wait: bool = True
    ) -> list[str]:
        """See :meth:`Workload.claimset`."""
        return self.workload.claimset(name, replicas=replicas, pool=pool, wait=wait)

    def claim(self, name: str, *, pool: str = "pool", wait_bound: bool = True) -> str:
        """See :meth:`Workload.claim`."""
        return self.workload.claim(name, pool=pool, wait_bound=wait_bound)

    def idle_pods(self, pool: str = "pool", *, at_least: int = 1) -> list[str]:
        """See :meth:`Workload.idle_pods`."""
        return self.workload.idle_pods(pool, at_least=at_least)

    def bound_claims(self, claimset: str, n: int) -> list[str]:
        """See :meth:`Workload.bound_claims`."""
        return self.workload.bound_claims(claimset, n)

    def pod_of(self, claim: str) -> str:
        """See :meth:`Workload.pod_of`."""
        return self.workload.pod_of(claim)

    def set_sessions(self, pod: str, sessions: int) -> ActionRecord:
        """See :meth:`Workload.set_sessions`."""
        return self.workload.set_sessions(pod, sessions)

    def wait(self, predicate: Predicate, *, timeout: float, what: str = "") -> Fired:
        """See :meth:`Triggers.wait`."""
        return self.triggers.wait(predicate, timeout=timeout, what=what)

    def when(self, predicate: Predicate, *, timeout: float) -> Fired:
        """See :meth:`Triggers.when`."""
        return self.triggers.when(predicate, timeout=timeout)

    def when_logged(
        self, msg: str, *, name: str | None = None, count: int = 1, timeout: float
    ) -> Fired:
        """See :meth:`Triggers.when_logged`."""
        return self.triggers.when_logged(msg, name=name, count=count, timeout=timeout)

    def scale_claimset(self, claimset: str, *, replicas: int, trigger: Fired | None = None):
        """See :meth:`Nemesis.scale_claimset`."""
        return self.nemesis.scale_claimset(claimset, replicas=replicas, trigger=trigger)

    def delete_pod(self, pod: str, *, trigger: Fired | None = None) -> ActionRecord:
        """See :meth:`Nemesis.delete_pod`."""
        return self.nemesis.delete_pod(pod, trigger=trigger)

    def delete_claim(self, claim: str, *, trigger: Fired | None = None) -> ActionRecord:
        """See :meth:`Nemesis.delete_claim`."""
        return self.nemesis.delete_claim(claim, trigger=trigger)

    def remove_label(self, pod: str, *, key: str, trigger: Fired | None = None) -> ActionRecord:
        """See :meth:`Nemesis.remove_label`."""
        return self.nemesis.remove_label(pod, key=key, trigger=trigger)

    def restart_operator(self, *, trigger: Fired | None = None) -> ActionRecord:
        """See :meth:`Nemesis.restart_operator`."""
        return self.nemesis.restart_operator(trigger=trigger)

    def pause_operator(self, seconds: float, *, trigger: Fired | None = None) -> ActionRecord:
        """See :meth:`Nemesis.pause_operator`."""
        return self.nemesis.pause_operator(seconds, trigger=trigger)

    def kill_operator(self, *, trigger: Fired | None = None) -> ActionRecord:
        """See :meth:`Nemesis.kill_operator`."""
        return self.nemesis.kill_operator(trigger=trigger)

    def settle(self, *, quiet: float | None = None, timeout: float | None = None) -> bool:
        """See :meth:`Checker.settle`."""
        return self.checker.settle(quiet=quiet, timeout=timeout)

    # -- the end -------------------------------------------------------------------

    def epilogue(self) -> None:
        """Scale every claim set to 0, delete standalone claims, and wait for everything to
        return to the pool (cleanup as an oracle)."""
        with phase("epilogue"):
            self.recorder.mark("epilogue")
            self.workload.scale_to_zero()
            # Wait for everything to go back to the pool, or for the deadline no-leaked-pods
            # judges at, so a leak is judged on a full finalize timeout.
            self.recorder.wait_for(
                lambda s: not s.all("CNClaim") and not bound_pods(s),
                timeout=self.options.finalize_timeout + self.options.scaled(5),
            )
            self.checker.settle(quiet=self.options.scaled(6), timeout=self.options.scaled(30) + 5)

    def finish(self) -> ScenarioResult:
        """Stop the chaos, check every gated window, evaluate the invariants: the result."""
        if self.result is None:
            with phase("verdict"):
                self.workload.agent.stop()
                self.recorder.barrier()
                missed = self.nemesis.verify_windows(self.recorder.history())
                self.result = self.checker.verdict(nodeid=self.nodeid, missed=missed)
        return self.result

    def verdict(self) -> ScenarioResult:
        """:meth:`finish`; the test fails (with the verdict's message, no framework
        traceback) on a violation and is reported inconclusive when a fault missed (or the
        operator was frozen from outside), an infrastructure error when a dependency was
        down."""
        result = self.finish()
        if result.outcome == "failed":
            pytest.fail(result.message, pytrace=False)
        if result.outcome == "inconclusive":
            raise Inconclusive(result.message)
        if result.outcome == "error":
            raise InfraError(result.message.split("\n", 1)[0])
        return result

    @property
    def detections(self) -> dict[str, Detection]:
        """First detection of each failed invariant by the continuous monitor."""
        return dict(self.checker.monitor.detections)

    def close(self) -> None:
        """Stop background work (agent retries, monitor) and the API clients; idempotent."""
        self.workload.agent.stop()
        self.checker.close()
        for api in self._apis:
            api.close()
        self._apis = []


__all__ = ["RunInfo", "Scenario", "describe_state", "failure_message"]
