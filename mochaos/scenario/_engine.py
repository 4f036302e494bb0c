"""The scenario's life cycle: built by the ``scenario`` fixture, driven by a test, concluded.

A :class:`Scenario` puts together the topology (:mod:`._topology`), the platform agent
(:mod:`._agent`), the one write path with its gate (:mod:`._writes`, :mod:`._gate`) and the
checker (:mod:`._checker`). A test builds the topology, waits on the recorder for the state
it wants (:meth:`Scenario.when`, never a bare sleep) and injects its faults
(:meth:`Scenario.inject`). The end is the fixture's: unless the test already did,
:meth:`Scenario.conclude` settles, runs the epilogue (every claim set to 0: cleanup as an
oracle) and gives the verdict, right after the test's body returns — so a test that forgot a
step is still judged, and one that judged nothing can never pass.
"""

from __future__ import annotations

import contextlib
import random
import time
from typing import Any, NoReturn

import pytest

from mochaos.ctrl.rest import Kube
from mochaos.errors import Inconclusive, MochaosError, UsageError
from mochaos.faults import FAULTS, Fault, MatrixOneFault
from mochaos.kube import Cluster
from mochaos.observe.history import MATRIXONE_FAULT, ActionRecord, PeriodEdge
from mochaos.observe.recorder import Recorder
from mochaos.operator.target import RunningOperator
from mochaos.progress import LOGGER, current_phase, phase
from mochaos.report.result import Outcome, ScenarioResult
from mochaos.scenario._agent import UnitAgent
from mochaos.scenario._checker import Checker, Detection, RunInfo
from mochaos.scenario._gate import Gate
from mochaos.scenario._predicates import all_returned
from mochaos.scenario._topology import Topology
from mochaos.scenario._triggers import Triggers
from mochaos.scenario._writes import AGENT, CHAOS, Writes

MOVED = {
    "pool": "sc.topology.pool", "claimset": "sc.topology.claimset",
    "claim": "sc.topology.claim", "idle_pods": "sc.topology.idle_pods",
    "bound_claims": "sc.topology.bound_claims", "pod_of": "sc.topology.pod_of",
    "set_sessions": "sc.topology.set_sessions", "wait": "sc.when",
    "scale_claimset": "sc.inject(scale_claimset(cs, replicas=n), trigger=…)",
    "delete_pod": "sc.inject(delete_pod(pod), trigger=…)",
    "delete_claim": "sc.inject(delete_claim(claim), trigger=…)",
    "remove_label": "sc.inject(remove_label(pod, key=…), trigger=…)",
    "restart_operator": "sc.inject(restart_operator(), trigger=…)",
    "pause_operator": "sc.inject(pause_operator(seconds=s), trigger=…)",
    "kill_operator": "sc.inject(kill_operator(), trigger=…)",
    "finish": "sc.verdict()", "actions": "sc.topology or sc.inject", "workload": "sc.topology",
    "nemesis": "sc.inject",
}  # fmt: skip
"""What became of the Scenario methods of earlier versions (a one-line usage error)."""
MATRIXONE_FAULTS = frozenset(n for n, k in FAULTS.items() if isinstance(k.apply, MatrixOneFault))


class Scenario(Triggers):
    """One chaos scenario in one namespace; see the module docstring.

    ``topology`` builds the pool, claim sets and claims and holds sessions; ``agent`` sends
    migration requests as the platform agent does; ``waits`` says how long the target may
    take for each step; ``when``/``when_logged`` wait on the recorded state; ``inject``
    applies a fault (:mod:`mochaos.faults`); ``settle``, ``epilogue`` and ``verdict`` end
    it, and :meth:`conclude` runs whichever of them the test did not.
    """

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
        self.waits = operator.waits
        """How long the target may take for each step (its real intervals)."""
        self._kubes = [
            Kube.from_kubeconfig(str(cluster.kubeconfig), user_agent=agent, context=cluster.context)
            for agent in (CHAOS, AGENT)
        ]
        self.gate = Gate(recorder)
        common: dict[str, Any] = {"namespace": namespace, "run_id": run.run_id,
                                  "recorder": recorder, "gate": self.gate}  # fmt: skip
        self.writes = Writes(self._kubes[0], operator=operator, component="chaos", **common)
        agent_writes = Writes(self._kubes[1], operator=None, component="agent", **common)
        self.topology = Topology(
            self.writes, recorder=recorder, triggers=self, operator=operator,
            run_id=run.run_id, options=run.options,
        )  # fmt: skip
        self.agent = UnitAgent(
            agent_writes, recorder, rng=random.Random(run.seed), options=run.options
        )
        """The platform agent (migration requests and their retries)."""
        self.checker = Checker(
            recorder, run, namespace=namespace, operator_user_agent=operator.user_agent
        )
        self.result: ScenarioResult | None = None
        self._settled_at: int | None = None
        self._epilogue_done = False
        recorder.mark("scenario")

    def __getattr__(self, name: str) -> NoReturn:
        if name in MOVED:
            raise UsageError(
                f"Scenario.{name} is gone", hint=f"use {MOVED[name]} (docs/writing-scenarios.md)"
            )
        raise AttributeError(f"'Scenario' object has no attribute {name!r}")

    def inject(self, fault: Fault, *, trigger: object = None) -> ActionRecord:
        """Apply ``fault`` (a value of :mod:`mochaos.faults`: ``delete_pod(pod)``, …), gated by
        ``trigger`` (what :meth:`when` returned: it must land while that still holds, checked
        at the verdict). A write the apiserver refused makes the scenario inconclusive."""
        if not isinstance(fault, Fault):
            raise UsageError(
                f"inject takes a fault, not {type(fault).__name__}",
                hint="make one with a kind of mochaos.scenario, e.g. delete_pod(pod)",
            )
        return self.writes.inject(fault, trigger=trigger, state=self.recorder.snapshot())

    def when_taken(self, fault: ActionRecord, *, timeout: float) -> dict[str, Any]:
        """Wait until the interposer rule of an injected interposer fault (what
        :meth:`inject` returned) took something — held a write, froze a stream; the rule's
        counters. Inconclusive when it took nothing within ``timeout`` wall seconds."""
        rule_id, interposer = self._rule_of(fault)
        since, deadline = 0, time.monotonic() + timeout
        with phase(f"waiting for {fault.action} {fault.kind}/{fault.name or '*'} to take"):
            while True:
                view = interposer.rule(rule_id)
                if view.get("matched"):
                    return view
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Inconclusive(
                        f"not ready after {timeout:.0f}s: {fault.action} {fault.kind}/"
                        f"{fault.name or '*'} took nothing the operator did"
                    )
                since, _ = interposer.wait(since, timeout=min(left, 5.0), rule=rule_id)

    def release(self, fault: ActionRecord) -> dict[str, Any]:
        """End a fault that holds something (what :meth:`inject` returned): an interposer
        fault lets go of what it holds now (its held writes go to the apiserver, its held
        events to the operator; its rule's counters are returned), a MatrixOne fault brings
        its component back (``{"released": True}``, False when it was back already)."""
        if fault.seq in self.writes.down or fault.fault in MATRIXONE_FAULTS:
            return {"released": self.writes.restore(fault.seq)}
        rule_id, interposer = self._rule_of(fault)
        view = interposer.release(rule_id)
        self.recorder.mark(f"released {fault.action} {fault.kind}/{fault.name or '*'}")
        return view

    def when_back(self, fault: ActionRecord, *, timeout: float) -> PeriodEdge:
        """Wait until the component a MatrixOne fault (what :meth:`inject` returned) took
        down is back — its seconds passed, or it was released: the end of its period in the
        history. Inconclusive when it is not back within ``timeout`` wall seconds."""
        component = fault.params.get("component")
        if fault.fault not in MATRIXONE_FAULTS or not component:
            raise UsageError(
                f"{fault.action} {fault.kind}/{fault.name} is no MatrixOne fault",
                hint="give what sc.inject returned for hakeeper_down, query_down, …",
            )

        def back(entry: object) -> bool:
            return (isinstance(entry, PeriodEdge) and entry.period == MATRIXONE_FAULT.name
                    and entry.edge == "end" and entry.subject == component)  # fmt: skip

        with phase(f"waiting for MatrixOne's {component} to be back"):
            edge = self.recorder.wait_for_entry(back, timeout=timeout, since=fault.seq)
        if edge is None:
            raise Inconclusive(f"not ready after {timeout:.0f}s: MatrixOne's {component} back")
        assert isinstance(edge, PeriodEdge)
        return edge

    def _rule_of(self, fault: ActionRecord) -> tuple[str, Any]:
        rule_id = self.writes.rules.get(fault.seq)
        if rule_id is None or self.operator.interposer is None:
            raise UsageError(
                f"{fault.action} {fault.kind}/{fault.name} is no interposer fault",
                hint="give what sc.inject returned for hold_write, stale_view, …",
            )
        return rule_id, self.operator.interposer

    # -- the end -------------------------------------------------------------------------

    def settle(self, *, quiet: float | None = None, timeout: float | None = None) -> bool:
        """Let the operator work until nothing is in flight and nothing changes for a while
        (:meth:`Checker.settle`); False when it timed out."""
        settled = self.checker.settle(quiet=quiet, timeout=timeout)
        self._settled_at = len(self.recorder.history())
        return settled

    def epilogue(self) -> None:
        """Stop the agent, scale every claim set to 0, delete standalone claims, and wait for
        everything to return to the pool (cleanup as an oracle)."""
        with phase("epilogue"):
            self.agent.stop()
            self.recorder.mark("epilogue")
            self._epilogue_done = True
            self.topology.scale_to_zero()
            # Wait for everything to go back to the pool, or for the deadline no-leaked-pods
            # judges at, so a leak is judged on a full finalize timeout.
            self.recorder.wait_for(
                all_returned, timeout=self.options.finalize_timeout + self.options.scaled(5)
            )
            self.checker.settle(quiet=self.options.scaled(6), timeout=self.options.scaled(30) + 5)

    def verdict(self) -> ScenarioResult:
        """Stop the chaos, check every gated window, evaluate the invariants: the scenario's
        result (made once; later calls return it). It is not raised: the test's outcome is
        made from it when the test ends — failed on a violation, inconclusive when a fault
        missed its window or the operator was frozen from outside, an error when a
        dependency was down."""
        if self.result is None:
            with phase("verdict"):
                self.agent.stop()
                self.recorder.barrier()
                missed = self.gate.verify(self.recorder.history())
                self.result = self.checker.verdict(nodeid=self.nodeid, missed=missed)
        return self.result

    def conclude(self, raised: BaseException | None = None) -> ScenarioResult:
        """The end the fixture owns, run right after the test's body: when the body returned,
        whichever of settle → epilogue → verdict the test did not run; when it raised, the
        result that exception stands for (the scenario did not run as written: nothing is
        judged, except that an Inconclusive scenario whose history already breaks an invariant
        for good is failed, Checker.cut_short). Never raises but for Ctrl-C."""
        if self.result is not None:
            if raised is not None and self.result.outcome == "passed":
                self.result = self._without_verdict(raised)
            return self.result
        if raised is None:
            try:
                self._let_go()
                if not self._epilogue_done:
                    if self._settled_at is None or self._moved_since_settle():
                        self.settle()
                    self.epilogue()
                return self.verdict()
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as err:  # the end itself broke: the result says how
                raised = err
        self.result = self._without_verdict(raised)
        return self.result

    def _let_go(self) -> None:
        """Bring back every MatrixOne component a fault holds down and release every rule of
        the operator's interposer: the faults end with the test's body, and nothing mo-chaos
        holds may be judged against the operator (nor left behind it)."""
        try:
            if self.writes.restore_all():
                self.recorder.mark("MatrixOne faults released")
        finally:
            interposer = self.operator.interposer
            if interposer is not None and interposer.pid is not None and interposer.release_all():
                self.recorder.mark("interposer rules released")

    def _moved_since_settle(self) -> bool:
        """Whether the test wrote something after it last settled."""
        since = self._settled_at or 0
        return any(isinstance(e, ActionRecord) for e in self.recorder.history()[since:])

    def _judge_cut_short(self, raised: Inconclusive) -> ScenarioResult | None:
        """A scenario that cannot go on as written may already have seen the operator break
        an invariant for good: let go of every fault and of the client sessions the body
        would have closed (a drain waiting on them would be ours), let what is in flight
        finish (settle), and fail it if so (Checker.cut_short); None: it stays Inconclusive.
        A settle the infrastructure breaks leaves it Inconclusive."""
        try:
            self._let_go()
            if self.topology.release_sessions():
                self.recorder.mark("client sessions released")
            self.checker.settle()
        except MochaosError as err:
            LOGGER.info("settling the cut-short scenario failed: %s", err)
            return None
        return self.checker.cut_short(nodeid=self.nodeid, reason=str(raised))

    def _without_verdict(self, raised: BaseException) -> ScenarioResult:
        """The result of a scenario that raised ``raised`` instead of reaching its verdict."""
        outcome: Outcome
        where = getattr(raised, "mochaos_phase", None) or current_phase()
        if isinstance(raised, Inconclusive):
            judged = self._judge_cut_short(raised)
            if judged is not None:
                return judged
            outcome, message = "inconclusive", f"INCONCLUSIVE: {raised}"
        elif isinstance(raised, pytest.skip.Exception):
            outcome, message = "inconclusive", f"INCONCLUSIVE: the test skipped itself: {raised}"
        elif isinstance(raised, KeyboardInterrupt):
            outcome, message = "error", f"mo-chaos: interrupted in phase '{where}'"
        elif isinstance(raised, MochaosError):
            kind = "usage error" if isinstance(raised, UsageError) else "infrastructure error"
            outcome, message = "error", f"mo-chaos {kind} in phase '{where}': {raised}"
        elif isinstance(raised, AssertionError):
            outcome, message = "failed", f"the test's assertion failed: {raised}"
        else:
            outcome = "error"
            message = (
                f"mo-chaos: the test raised {type(raised).__name__} in phase '{where}': {raised} "
                "(a defect of the test, not a verdict on the operator)"
            )
        self.checker.close()
        result = self.checker.result(
            nodeid=self.nodeid, outcome=outcome, message=message,
            phase=where if outcome == "error" else "",
        )  # fmt: skip
        result.usage_error = isinstance(raised, UsageError)
        return result

    @property
    def detections(self) -> dict[str, Detection]:
        """First detection of each failed invariant by the continuous monitor."""
        return dict(self.checker.monitor.detections)

    def close(self) -> None:
        """Stop background work (agent retries, monitor) and the API clients, bring back
        every MatrixOne component still down, release whatever the operator's interposer
        still holds; idempotent."""
        self.agent.stop()
        self.checker.close()
        self._kubes = []
        with contextlib.suppress(MochaosError):  # an interposer gone has nothing to release
            self._let_go()
