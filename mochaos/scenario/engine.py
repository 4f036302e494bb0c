"""The scenario engine: topology, state-gated chaos, settling, and the verdict.

A suite drives one :class:`Scenario` per test: it builds the pool and claim
sets, waits on the recorder for the states it wants (never on a bare sleep),
fires actions with the trigger's evidence attached, lets the system settle,
runs the epilogue (every claim set to 0: cleanup as an oracle) and asks for
the verdict. The verdict is the invariants over the recorded history, plus
the proof that every gated fault landed while its trigger still held.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kubernetes import client

from mochaos.errors import Inconclusive, InfraError
from mochaos.invariants import Checker, evaluate
from mochaos.observe.audit import AuditSlice
from mochaos.observe.oplog import count_retries
from mochaos.observe.recorder import Recorder
from mochaos.scenario.actions import Actions, Fired
from mochaos.scenario.agent import UnitAgent
from mochaos.scenario.predicates import Predicate, claim_bound, name_of
from mochaos.scenario.topology import cn_claim, cn_claimset, cn_pool
from mochaos.types import (
    CLAIMED_BY_LABEL,
    CLAIMSET_LABEL,
    PHASE_LABEL,
    ActionRecord,
    Change,
    CheckOptions,
    Entry,
    History,
    LogRecord,
    RunningOperator,
    ScenarioResult,
    State,
    Verdict,
    obj_deleting,
    obj_labels,
)

AUDIT_TOLERANCE = 1
"""Largest per-claim difference allowed between our record of the agent's patches and the
audit log's (a patch in flight when the slice is read)."""

MONITOR_PERIOD = 0.25
"""How often the invariants are evaluated during the run (seconds)."""


@dataclass
class RunInfo:
    """What the engine needs to know about the run it belongs to."""

    run_id: str
    seed: int
    options: CheckOptions
    operator_target: str = ""
    operator_version: str = ""
    cluster_provider: str = ""
    k8s_version: str = ""
    audit_log: Path | None = None


@dataclass
class _Gated:
    record: ActionRecord
    predicate: Predicate


@dataclass
class Detection:
    """When the continuous monitor first saw an invariant fail."""

    invariant: str
    detected_at: float
    violation_t: float


@dataclass
class _Monitor:
    """Feeds the recorder's journal to one incremental Checker; remembers first failures."""

    recorder: Recorder
    options: CheckOptions
    detections: dict[str, Detection] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    checker: Checker = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _cursor: int = 0

    def __post_init__(self) -> None:
        self.checker = Checker(self.options)

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="invariant-monitor", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(MONITOR_PERIOD):
            self.update()

    def update(self) -> float:
        """Judge what was recorded since the last update; return the ``now`` judged at."""
        with self.lock:
            now = time.time()  # before reading: every change received by now is read
            entries, self._cursor = self.recorder.journal(self._cursor)
            failed = self.checker.feed(entries) + self.checker.poll(now)
            for v in failed:
                if v.invariant not in self.detections and v.violation:
                    self.detections[v.invariant] = Detection(
                        v.invariant, time.time(), v.violation.t
                    )
            return now

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=5)


class Scenario:
    """One chaos scenario in one namespace; see the module docstring."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        agent_api: client.ApiClient | None = None,
        namespace: str,
        recorder: Recorder,
        operator: RunningOperator | None,
        run: RunInfo,
        on_result: Callable[[ScenarioResult], None] | None = None,
        nodeid: str = "",
    ) -> None:
        self.namespace = namespace
        self.recorder = recorder
        self.operator = operator
        self.run = run
        self.options = run.options
        self.time_scale = run.options.time_scale
        self.rng = random.Random(run.seed)
        self.actions = Actions(
            api, namespace=namespace, run_id=run.run_id, recorder=recorder, operator=operator
        )
        agent_actions = Actions(
            agent_api or api, namespace=namespace, run_id=run.run_id, recorder=recorder,
            operator=None,
        )  # fmt: skip
        self.agent = UnitAgent(agent_actions, recorder, rng=self.rng, time_scale=self.time_scale)
        self._gated: list[_Gated] = []
        self._claimsets: list[str] = []
        self._claims: list[str] = []
        self._on_result = on_result
        self._nodeid = nodeid
        self._started = time.monotonic()
        self._audit = AuditSlice(run.audit_log) if run.audit_log else None
        self._monitor = _Monitor(recorder, self.options)
        self._monitor.start()
        self.result: ScenarioResult | None = None
        recorder.mark("scenario")

    # -- time ----------------------------------------------------------------------

    def ts(self, seconds: float) -> float:
        """Operator-time seconds as wall seconds under --time-scale."""
        return seconds * self.time_scale

    # -- topology --------------------------------------------------------------

    def pool(self, name: str = "pool", *, max_idle: int = 2) -> str:
        """Create a CNPool keeping ``max_idle`` idle pods; wait until they are Idle."""
        # A real operator needs a real CNSet template and deps (from its target);
        # the model only needs the shape.
        spec = getattr(self.operator, "pool_spec", None)
        pool = cn_pool(
            name, run_id=self.run.run_id, max_idle=max_idle,
            template=spec.template if spec else None, deps=spec.deps if spec else None,
        )  # fmt: skip
        if spec is not None:
            pool["spec"]["podLabels"].update(spec.pod_labels)
        self.actions.create(pool)
        timeout = spec.ready_timeout if spec else self.ts(60) + 30
        self.wait(_idle_pods_at_least(name, max_idle), timeout=timeout,
                  what=f"{max_idle} Idle pods in pool {name}")  # fmt: skip
        return name

    def claimset(self, name: str, *, replicas: int, pool: str = "pool") -> list[str]:
        """Create a CNClaimSet and wait until ``replicas`` of its claims are Bound."""
        self.actions.create(cn_claimset(name, run_id=self.run.run_id, replicas=replicas, pool=pool))
        self._claimsets.append(name)
        return self.bound_claims(name, replicas)

    def idle_pods(self, pool: str = "pool", *, at_least: int = 1) -> list[str]:
        """Wait until the pool has ``at_least`` Idle pods; return the Idle pods' names."""
        self.wait(
            _idle_pods_at_least(pool, at_least), timeout=self.ts(60) + 30,
            what=f"{at_least} Idle pods in pool {pool}",
        )  # fmt: skip
        state = self.recorder.snapshot()
        return sorted(
            n for n, p in state.all("Pod").items()
            if obj_labels(p).get(PHASE_LABEL) == "Idle" and not obj_deleting(p)
        )  # fmt: skip

    def claim(self, name: str, *, pool: str = "pool", wait_bound: bool = True) -> str:
        """Create a standalone CNClaim (no claim set); by default wait until it is Bound."""
        self.actions.create(cn_claim(name, run_id=self.run.run_id, pool=pool))
        self._claims.append(name)
        if wait_bound:
            self.wait(claim_bound(name), timeout=self.ts(60) + 30)
        return name

    def bound_claims(self, claimset: str, n: int) -> list[str]:
        """Wait until ``n`` live claims of the set are Bound; names ordered by their pod's age."""
        self.wait(
            lambda s: len(_bound_of(s, claimset)) >= n, timeout=self.ts(60) + 30,
            what=f"{n} Bound claims in claim set {claimset}",
        )  # fmt: skip
        state = self.recorder.snapshot()
        return sorted(_bound_of(state, claimset), key=lambda c: _pod_age_key(state, c))

    def pod_of(self, claim: str) -> str:
        """The pod a claim's spec names right now."""
        obj = self.recorder.snapshot().get("CNClaim", claim) or {}
        pod = (obj.get("spec") or {}).get("podName")
        if not pod:
            raise Inconclusive(f"claim {claim} names no pod")
        return pod

    # -- triggers --------------------------------------------------------------

    def wait(self, predicate: Predicate, *, timeout: float, what: str = "") -> Fired:
        """Wait for a state; Inconclusive (naming the last state) when it never comes."""
        got = self.recorder.wait_for(predicate, timeout=timeout)
        if got is None:
            self.recorder.check_healthy()
            raise Inconclusive(
                f"waited {timeout:.0f}s for {what or name_of(predicate)}; it never held. "
                f"Last seen: {describe_state(self.recorder.snapshot())}"
            )
        entry, state = got
        return Fired(name=what or name_of(predicate), entry=entry, rv=_rv_at(entry, state))

    def when(self, predicate: Predicate, *, timeout: float) -> Fired:
        """Wait until ``predicate`` holds; its evidence gates the next action."""
        fired = self.wait(predicate, timeout=timeout)
        return Fired(name=fired.name, entry=fired.entry, rv=fired.rv, predicate=predicate)

    def when_logged(self, msg: str, *, name: str | None = None, count: int = 1,
                    timeout: float) -> Fired:  # fmt: skip
        """Wait until the operator logged ``msg`` (for object ``name``) ``count`` times."""
        seen: list[LogRecord] = []

        def matches(entry: Entry) -> bool:
            if isinstance(entry, LogRecord) and entry.msg == msg and name in (None, entry.name):
                seen.append(entry)
            return len(seen) >= count

        entry = self.recorder.wait_for_entry(matches, timeout=timeout, since=0)
        if entry is None:
            raise Inconclusive(f"operator never logged {msg!r} {count}× for {name or 'any'}")
        return Fired(name=f"{count}× {msg!r}", entry=entry, rv=None)

    def gate(self, record: ActionRecord, fired: Fired) -> ActionRecord:
        """Remember that ``record`` was gated by ``fired``, to verify its window at the end."""
        if fired.predicate is not None and record.write_rv is not None:
            self._gated.append(_Gated(record, fired.predicate))
        return record

    # -- chaos (thin wrappers that keep the trigger evidence) --------------------------

    def scale_claimset(self, claimset: str, *, replicas: int, trigger: Fired | None = None):
        """Scale a claim set; gated when ``trigger`` came from :meth:`when`."""
        rec = self.actions.scale_claimset(claimset, replicas=replicas, trigger=trigger)
        return self.gate(rec, trigger) if trigger else rec

    def delete_pod(self, pod: str, *, trigger: Fired | None = None) -> ActionRecord:
        """Delete a pod; gated when ``trigger`` came from :meth:`when`."""
        rec = self.actions.delete_pod(pod, trigger=trigger)
        return self.gate(rec, trigger) if trigger else rec

    def delete_claim(self, claim: str, *, trigger: Fired | None = None) -> ActionRecord:
        """Delete a claim; gated when ``trigger`` came from :meth:`when`."""
        rec = self.actions.delete_claim(claim, trigger=trigger)
        return self.gate(rec, trigger) if trigger else rec

    def remove_label(self, pod: str, *, key: str, trigger: Fired | None = None) -> ActionRecord:
        """Remove a pod label; gated when ``trigger`` came from :meth:`when`."""
        rec = self.actions.remove_label(pod, key=key, trigger=trigger)
        return self.gate(rec, trigger) if trigger else rec

    def set_sessions(self, pod: str, sessions: int) -> ActionRecord:
        """Stand in for MO's query service: the pod's session count (its deletion cost)."""
        score = f'{{"sessionCount":{sessions},"pipelineCount":0,"replicaCount":0}}'
        return self.actions.annotate_pod(pod, annotations={"matrixorigin.io/score": score})

    # -- settling ------------------------------------------------------------------

    def settle(self, *, quiet: float | None = None, timeout: float | None = None) -> bool:
        """Let the operator work until nothing is in flight and nothing changes for a while.

        In flight means a claim being deleted or migrating whose deadline
        (finalize / migration timeout) has not passed yet: settling waits it out,
        so a stuck finalizer is judged on evidence, not cut short by the epilogue.
        """
        o = self.options
        # Quiet for longer than the invariants' grace, so a steady bad state gets judged.
        quiet = quiet if quiet is not None else o.grace + self.ts(3)
        timeout = timeout if timeout is not None else (
            max(o.finalize_timeout, o.migration_timeout) + self.ts(30) + 5
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        # After an apiserver outage nothing arrives while the watches reconnect: catch up
        # first, or the silence would pass for calm.
        self.recorder.barrier(timeout=timeout)
        monitor = self._monitor
        while True:
            now = monitor.update()
            with monitor.lock:
                # Our own writes (the agent's retries) do not count as the system being busy.
                last = monitor.checker.last_move()
                busy = monitor.checker.in_flight(now)
            if now - last >= quiet and not busy:
                self.recorder.mark("settled")
                return True
            if time.monotonic() >= deadline:
                self.recorder.mark("settle-timeout")
                return False
            self.recorder.wait_for_entry(lambda e: True, timeout=min(0.5, quiet))

    def epilogue(self) -> None:
        """Scale every claim set to 0, delete standalone claims, and wait for everything to
        return to the pool (cleanup as an oracle)."""
        self.agent.stop()
        self.recorder.mark("epilogue")
        for cs in self._claimsets:
            self.actions.scale_claimset(cs, replicas=0)
        for claim in self._claims:
            if self.recorder.snapshot().get("CNClaim", claim) is not None:
                self.actions.delete_claim(claim)
        # Everything should go back to the pool: wait for it, or for the deadline that
        # no-leaked-pods judges at, so a leak is judged on a full finalize timeout.
        self.recorder.wait_for(
            lambda s: not s.all("CNClaim") and not _bound_pods(s),
            timeout=self.options.finalize_timeout + self.ts(5),
        )
        self.settle(quiet=self.ts(6), timeout=self.ts(30) + 5)

    # -- verdict ---------------------------------------------------------------------

    def finish(self) -> ScenarioResult:
        """Stop the chaos, check every gated window, evaluate the invariants, build the result."""
        if self.result is not None:
            return self.result
        self.agent.stop()
        self._monitor.close()
        self.recorder.barrier()
        history = self.recorder.history()
        missed = self._verify_windows(history)
        history = self.recorder.history()
        verdicts = evaluate(history, self.options, final=True)
        failed = [v for v in verdicts if v.failed]
        outcome = "failed" if failed else ("inconclusive" if missed else "passed")
        retries = count_retries(history)
        self.result = ScenarioResult(
            nodeid=self._nodeid,
            outcome=outcome,
            operator_target=self.run.operator_target,
            operator_version=self.run.operator_version,
            cluster_provider=self.run.cluster_provider,
            k8s_version=self.run.k8s_version,
            verdicts=verdicts,
            finalize_retries=dict(retries.finalize),
            agent_migration_retries=retries.agent_migration_retries,
            bugs=sorted({b for v in failed for b in v.bugs}),
            duration=time.monotonic() - self._started,
            seed=self.run.seed,
            check_options=asdict(self.options),
        )
        self.result.audit_counts = self._audit_counts(retries.migration_requests)
        self.result.detection_latency = {
            d.invariant: round(max(d.detected_at - d.violation_t, 0.0), 3)
            for d in self._monitor.detections.values()
        }
        self.result.message = failure_message(self.result, history, missed)
        if self._on_result is not None:
            self._on_result(self.result)
        return self.result

    def verdict(self) -> ScenarioResult:
        """:meth:`finish`, then fail the test on a violation or report it inconclusive."""
        result = self.finish()
        if result.outcome == "failed":
            raise AssertionError(result.message)
        if result.outcome == "inconclusive":
            raise Inconclusive(result.message)
        return result

    def _audit_counts(self, recorded: Counter[str]) -> dict[str, float]:
        """The audit log's view, next to ours: agent patches must agree within one per claim."""
        if self._audit is None:
            return {}
        agent = getattr(self.operator, "user_agent", "")
        counts = self._audit.count(self.namespace, operator_user_agent=agent)
        claims = set(recorded) | set(counts.agent_patches)
        worst = max((abs(recorded[c] - counts.agent_patches[c]) for c in claims), default=0)
        return {
            "agent.patches.recorded": float(sum(recorded.values())),
            "agent.patches.audit": float(sum(counts.agent_patches.values())),
            "agent.patches.agree": 1.0 if worst <= AUDIT_TOLERANCE else 0.0,
            "operator.writes": float(sum(counts.operator_writes.values())),
            "framework.requests": float(counts.framework_requests),
            "framework.rps": round(counts.framework_rps, 3),
        }

    def _verify_windows(self, history: History) -> list[str]:
        missed = []
        for g in self._gated:
            held = bool(g.predicate(history.state_at_rv(g.record.write_rv or 0)))
            self.recorder.resolve_action(g.record.seq, in_window=held)
            if not held:
                missed.append(
                    f"{g.record.action} {g.record.kind}/{g.record.name} landed at rv "
                    f"{g.record.write_rv}, after its trigger '{g.record.trigger}' stopped holding"
                )
        return missed

    @property
    def detections(self) -> dict[str, Detection]:
        """First detection of each failed invariant by the continuous monitor."""
        return dict(self._monitor.detections)

    def close(self) -> None:
        """Stop background work (agent retries, monitor); idempotent."""
        self.agent.stop()
        self._monitor.close()


def failure_message(result: ScenarioResult, history: History, missed: list[str]) -> str:
    """The verdict in a few lines; the first alone names invariants, bugs and retry counts.

    CI systems often show only the first line of a JUnit failure message, so it
    carries the summary; the lines below give each violation's time and objects.
    """
    failed = [v for v in result.verdicts if v.failed]
    worst = max(result.finalize_retries.items(), key=lambda kv: kv[1], default=("-", 0))
    retries = f"finalize retries max {worst[1]} ({worst[0]})"
    if failed:
        ids = ", ".join(v.invariant for v in failed)
        bugs = ",".join(result.bugs) or "-"
        head = (
            f"{len(failed)} invariant(s) violated by {result.operator_target}: {ids} "
            f"[bugs {bugs}]; {retries}; seed {result.seed}"
        )
    elif missed:
        head = f"INCONCLUSIVE on {result.operator_target}: a fault missed its window; {retries}"
    else:
        head = f"all invariants held on {result.operator_target}; {retries}"
    lines = [head]
    lines += ["  " + _verdict_line(v, history.start) for v in failed]
    lines += [f"  {m}" for m in missed]
    counts = ", ".join(f"{k}={n}" for k, n in sorted(result.finalize_retries.items()))
    lines.append(
        f"  finalize retries: {counts or 'none'}; agent migration retries: "
        f"{result.agent_migration_retries}; replay with --chaos-seed={result.seed}"
    )
    return "\n".join(lines)


def _verdict_line(v: Verdict, start: float) -> str:
    viol = v.violation
    bugs = ",".join(v.bugs)
    if viol is None:
        return f"{v.invariant} [{bugs}]: {v.note}"
    objs = ", ".join(viol.objects)
    return f"{v.invariant} [{bugs}] at +{viol.t - start:.1f}s: {viol.message} ({objs})"


# -- state helpers --------------------------------------------------------------------


def describe_state(state: State, *, limit: int = 12) -> str:
    """A one-line summary of claims and pods, for a wait that failed."""
    claims = [
        f"{n}={(c.get('status') or {}).get('phase') or '-'}"
        f"({(c.get('spec') or {}).get('podName') or '-'}{', deleting' if obj_deleting(c) else ''})"
        for n, c in sorted(state.all("CNClaim").items())
    ]
    pods = [
        f"{n}={obj_labels(p).get(PHASE_LABEL) or '-'}"
        f"{'/' + obj_labels(p)[CLAIMED_BY_LABEL] if CLAIMED_BY_LABEL in obj_labels(p) else ''}"
        for n, p in sorted(state.all("Pod").items())
    ]

    def head(items: list[str]) -> str:
        more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
        return ", ".join(items[:limit]) + more if items else "none"

    return f"claims: {head(claims)}; pods: {head(pods)}"


def _bound_of(state: State, claimset: str) -> list[str]:
    return [
        name
        for name, c in state.all("CNClaim").items()
        if obj_labels(c).get(CLAIMSET_LABEL) == claimset
        and not obj_deleting(c)
        and (c.get("status") or {}).get("phase") == "Bound"
        and (c.get("spec") or {}).get("podName")
    ]


def _bound_pods(state: State) -> list[str]:
    return [n for n, p in state.all("Pod").items() if obj_labels(p).get(PHASE_LABEL) == "Bound"]


def _pod_age_key(state: State, claim: str) -> tuple[str, str]:
    pod = ((state.get("CNClaim", claim) or {}).get("spec") or {}).get("podName", "")
    created = ((state.get("Pod", pod) or {}).get("metadata") or {}).get("creationTimestamp", "")
    return created, claim


def _idle_pods_at_least(pool: str, n: int) -> Predicate:
    def check(s: State) -> bool:
        idle = [
            p
            for p in s.all("Pod").values()
            if obj_labels(p).get("pool.matrixorigin.io/pool-name") == pool
            and obj_labels(p).get("pool.matrixorigin.io/phase") == "Idle"
            and not obj_deleting(p)
        ]
        return len(idle) >= n

    return check


def _rv_at(entry: Entry | None, state: State) -> int | None:
    if isinstance(entry, Change):
        return entry.rv
    rvs = [
        int((o.get("metadata") or {}).get("resourceVersion") or 0)
        for kind in state.objects.values()
        for o in kind.values()
    ]
    return max(rvs, default=None)


__all__ = ["Detection", "InfraError", "RunInfo", "Scenario", "failure_message"]
