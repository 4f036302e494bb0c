"""The checker: the invariants watched during the run, settling, and the verdict.

A monitor feeds what the recorder records to one incremental invariant checker and
remembers when each invariant first failed (detection latency): a failure it sees is
announced only once the history, as the verdict judges it (resourceVersion order, the
outage-free clock), fails it too, so a live "violated" line is never one the verdict does
not give. :meth:`Checker.settle`
lets the operator work until nothing is in flight and nothing changes for a while (both
read from that same checker), so a stuck state is judged on evidence;
:meth:`Checker.verdict` evaluates every invariant over the whole history,
adds the nemesis's window proofs and the audit log's second opinion, and builds the
scenario's result.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace

from mochaos import invariants
from mochaos.bugs import describe_bugs
from mochaos.config import CheckOptions
from mochaos.invariants.judged import (
    OperatorClock,
    dependency_outages,
    describe,
    external_freezes,
)
from mochaos.invariants.verdict import Verdict
from mochaos.observe.audit import AuditSlice
from mochaos.observe.churn import churned_pods
from mochaos.observe.history import Entry, History, PeriodEdge
from mochaos.observe.interposed import write_counts
from mochaos.observe.oplog import count_retries
from mochaos.observe.recorder import Recorder
from mochaos.progress import LOGGER, phase
from mochaos.report.result import Outcome, ScenarioResult

AUDIT_TOLERANCE = 1
"""Largest per-claim difference allowed between our record of the agent's patches and the
audit log's (a patch in flight when the slice is read)."""

NOTHING_TO_JUDGE = (
    "the scenario gave the invariants nothing to judge: no claim was ever recorded (did its "
    "topology build anything?)"
)
"""Why a scenario whose history holds no CNClaim is no pass: every invariant is about claims
and their pods, and each would hold for want of anything to hold for."""

MONITOR_PERIOD = 0.25
"""How often the invariants are evaluated during the run (seconds)."""
RECONFIRM_EVERY = 2.0
"""Seconds between two judged evaluations of failures the judged history did not confirm
yet (a new failure is confirmed at once): each judges the whole history."""


@dataclass
class Detection:
    """When the continuous monitor first saw an invariant fail."""

    invariant: str
    detected_at: float
    violation_t: float


@dataclass(frozen=True)
class Activity:
    """What settle reads from the monitor at one moment."""

    last_move: float
    """When the system last moved (our own writes aside)."""
    in_flight: list[str]
    """Claims being deleted or migrating whose deadline has not passed."""
    undecided: list[str]
    """What may still change a verdict: in flight or open for invariants not failed for good."""
    decided: list[str]
    """Invariants that failed for good (in the order the monitor judges them)."""


@dataclass
class Monitor:
    """Feeds the recorder's journal to one incremental invariant checker; remembers when
    each invariant first failed. ``update`` is called by its thread and by settle."""

    recorder: Recorder
    options: CheckOptions
    detections: dict[str, Detection] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    invariants: invariants.IncrementalChecker = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock)
    cpu: float = 0.0
    """CPU seconds spent in :meth:`update` (its thread's and settle's)."""
    clock: OperatorClock = field(default_factory=OperatorClock)
    """The outages and freezes seen so far: the monitor judges on the operator's clock, as
    the verdict does (mochaos.invariants.judged), so settling waits out the same deadlines."""
    _cursor: int = 0
    _edges: list[PeriodEdge] = field(default_factory=list)
    pending: set[str] = field(default_factory=set)
    """Invariants the incremental checker saw fail that the judged history does not fail
    yet: confirmed (or not) again, at most every :data:`RECONFIRM_EVERY`, once something
    new is recorded."""
    _confirmed_at: float = -math.inf

    def __post_init__(self) -> None:
        self.invariants = invariants.IncrementalChecker(self.options, invariants.ALL)

    def start(self) -> None:
        """Start the monitor thread."""
        self.thread = threading.Thread(target=self._run, name="invariant-monitor", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(MONITOR_PERIOD):
            self.update()

    def update(self) -> float:
        """Judge what was recorded since the last update; return the ``now`` judged at, on
        the operator's clock (an apiserver outage, a dependency down or a frozen operator
        stops it)."""
        with self.lock:
            cpu = time.thread_time()
            wall = time.time()  # before reading: every change received by now is read
            entries, self._cursor = self.recorder.journal(self._cursor)
            self._learn_outages(entries)
            if self.clock.outages:
                entries = [replace(e, t=self.clock.operator_time(e.t)) for e in entries]
            now = self.clock.operator_time(wall)
            failed = self.invariants.feed(entries) + self.invariants.poll(now)
            seen = {v.invariant for v in failed if v.violation} - set(self.detections)
            again = entries and time.monotonic() - self._confirmed_at >= RECONFIRM_EVERY
            if seen - self.pending or (self.pending and again):
                self.pending |= seen
                self._confirm(wall)
            self.cpu += time.thread_time() - cpu
            return now

    def _confirm(self, wall: float) -> None:
        """Announce each pending failure the judged history fails too, at ``wall``."""
        self._confirmed_at = time.monotonic()
        chosen = [invariants.get(name) for name in sorted(self.pending)]
        verdicts = invariants.evaluate(
            self.recorder.history(), self.options, final=False, now=wall, invariants=chosen
        )
        for v in verdicts:
            if v.failed and v.violation is not None:
                self.pending.discard(v.invariant)
                self.detections[v.invariant] = Detection(v.invariant, time.time(), v.violation.t)
                LOGGER.info("invariant %s violated: %s", v.invariant, v.violation.message)

    def _learn_outages(self, entries: list[Entry]) -> None:
        found = [e for e in entries if isinstance(e, PeriodEdge) and e.kind.stops_clock]
        if found:
            self._edges += found
            self.clock = OperatorClock.of(History(self._edges))

    def activity(self, now: float) -> Activity:
        """When the system last moved (our own writes aside) and what is in flight at ``now``."""
        with self.lock:
            return Activity(
                last_move=self.invariants.last_move(),
                in_flight=self.invariants.in_flight(now),
                undecided=self.invariants.undecided(now),
                decided=self.invariants.decided(now),
            )

    def close(self) -> None:
        """Stop the monitor thread."""
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=5)


@dataclass
class RunInfo:
    """What the checker needs to know about the run it belongs to."""

    run_id: str
    seed: int
    options: CheckOptions
    operator_target: str = ""
    operator_version: str = ""
    cluster_provider: str = ""
    k8s_version: str = ""
    audit_log: object | None = None


class Checker:
    """Monitor, settle and verdict for one scenario."""

    def __init__(
        self, recorder: Recorder, run: RunInfo, *, namespace: str, operator_user_agent: str
    ) -> None:
        self._recorder = recorder
        self.run = run
        self.options = run.options
        self._namespace = namespace
        self._operator_user_agent = operator_user_agent
        self._audit = AuditSlice(run.audit_log) if run.audit_log else None  # type: ignore[arg-type]
        self._started = time.monotonic()
        self.monitor = Monitor(recorder, self.options)
        self.monitor.start()
        self._confirmed: tuple[tuple[int, frozenset[str]], bool] | None = None
        self._audit_verbs: dict[str, int] = {}
        """The operator's writes by verb as the audit log counted them (its last count)."""

    def settle(
        self, *, quiet: float | None = None, timeout: float | None = None, early: bool = True
    ) -> bool:
        """Let the operator work until nothing is in flight and nothing changes for a while.

        In flight means a claim being deleted or migrating whose deadline (finalize /
        migration timeout) has not passed yet: settling waits it out, so a stuck finalizer
        is judged on evidence, not cut short by the epilogue. With ``early`` (the default),
        what is in flight only for invariants that already failed for good is not waited
        for (their verdict is certain, see :meth:`_certain`); every other deadline is.
        """
        o = self.options
        # Quiet for longer than the invariants' grace, so a steady bad state gets judged.
        quiet = quiet if quiet is not None else o.grace + o.scaled(3)
        timeout = timeout if timeout is not None else (
            max(o.finalize_timeout, o.migration_timeout) + o.scaled(30) + 5
        )  # fmt: skip
        with phase("settle"):
            deadline = time.monotonic() + timeout
            # After an apiserver outage nothing arrives while the watches reconnect: catch
            # up first, or the silence would pass for calm.
            self._recorder.barrier(timeout=timeout)
            while True:
                now = self.monitor.update()
                # Our own writes (the agent's retries) do not count as the system being busy;
                # a dependency down is no calm: wait for its recovery (or the deadline).
                seen = self.monitor.activity(now)
                down = [p for p in dependency_outages(self._recorder.history())
                        if not math.isfinite(p.end)]  # fmt: skip
                calm = now - seen.last_move >= quiet and not down
                if calm and not seen.in_flight:
                    self._recorder.mark("settled")
                    return True
                if calm and early and not seen.undecided and self._certain(seen.decided, now):
                    LOGGER.info(
                        "settled: %s failed for good; not waiting for %s",
                        ", ".join(seen.decided), ", ".join(seen.in_flight),
                    )  # fmt: skip
                    self._recorder.mark("settled")
                    return True
                if time.monotonic() >= deadline:
                    self._recorder.mark("settle-timeout")
                    return False
                self._recorder.wait_for_entry(lambda e: True, timeout=min(0.5, quiet))

    def _certain(self, decided: list[str], now: float) -> bool:
        """Whether the invariants the monitor found failed for good also fail at ``now`` in
        the history as the verdict will judge it (resourceVersion order, outage-free
        clock). ``now`` is on the operator's clock, as the monitor's. Evaluated again only
        when the history or the decided set grew."""
        history = self._recorder.history()
        key = (len(history), frozenset(decided))
        if self._confirmed is None or self._confirmed[0] != key:
            wall = self.monitor.clock.wall_time(now)
            verdicts = invariants.evaluate(history, self.options, final=False, now=wall)
            failed = {v.invariant for v in verdicts if v.failed}
            self._confirmed = (key, set(decided) <= failed)
        return self._confirmed[1]

    def verdict(self, *, nodeid: str, missed: list[str]) -> ScenarioResult:
        """Evaluate every invariant over the whole history and build the scenario's result:
        failed on a violation; inconclusive when a gated write did not land in its window
        (``missed``) or the scenario gave the invariants nothing to judge (no claim)."""
        self.monitor.close()
        history = self._recorder.history()
        if not any(True for _ in history.changes("CNClaim")):
            missed = [*missed, NOTHING_TO_JUDGE]
        verdicts = invariants.evaluate(history, self.options, final=True)
        failed = [v for v in verdicts if v.failed]
        outcome: Outcome = "failed" if failed else ("inconclusive" if missed else "passed")
        excuse = not_the_operators(history) if failed else None
        if excuse is not None:
            outcome = excuse[0]
        result = self.result(nodeid=nodeid, outcome=outcome, verdicts=verdicts, history=history,
                             phase="verdict" if outcome == "error" else "")  # fmt: skip
        result.detection_latency = {
            d.invariant: round(max(d.detected_at - d.violation_t, 0.0), 3)
            for d in self.monitor.detections.values()
        }
        result.message = failure_message(result, history, missed)
        if excuse is not None:
            result.message = f"{excuse[1]}\n{result.message}"
        return result

    def cut_short(self, *, nodeid: str, reason: str) -> ScenarioResult | None:
        """The result of a scenario that could not go on as written (``reason``: why it is
        Inconclusive), when what the operator did until then already breaks an invariant for
        good — no later entry could change it (``final=False``) — and no outage excuses it:
        failed, with the reason beside the violations. None otherwise: it stays Inconclusive."""
        self.monitor.close()
        history = self._recorder.history()
        verdicts = invariants.evaluate(history, self.options, final=False)
        if not any(v.failed for v in verdicts) or not_the_operators(history) is not None:
            return None
        result = self.result(nodeid=nodeid, outcome="failed", verdicts=verdicts, history=history)
        result.message = (
            f"{failure_message(result, history, [])}\n  the scenario itself was cut short "
            f"(INCONCLUSIVE: {reason}); the violations above are already certain"
        )
        return result

    def result(
        self,
        *,
        nodeid: str,
        outcome: Outcome,
        verdicts: list[Verdict] | None = None,
        message: str = "",
        phase: str = "",
        history: History | None = None,
    ) -> ScenarioResult:
        """The scenario's result: its outcome, its verdicts (none when it was not judged),
        what the run was, and the counts read from its history."""
        history = history if history is not None else self._recorder.history()
        verdicts = verdicts or []
        retries = count_retries(history)
        result = ScenarioResult(
            nodeid=nodeid,
            outcome=outcome,
            operator_target=self.run.operator_target,
            operator_version=self.run.operator_version,
            cluster_provider=self.run.cluster_provider,
            k8s_version=self.run.k8s_version,
            verdicts=verdicts,
            finalize_retries=dict(retries.finalize),
            agent_migration_retries=retries.agent_migration_retries,
            bugs=sorted({b for v in verdicts if v.failed for b in v.bugs}),
            duration=time.monotonic() - self._started,
            seed=self.run.seed,
            check_options=asdict(self.options),
            message=message,
            phase=phase,
        )
        result.audit_counts = self._audit_counts(retries.migration_requests)
        result.operator_writes = dict(write_counts(history.api_calls())) or self._audit_verbs
        result.churned_pods = len(churned_pods(history))
        result.monitor_cpu = round(self.monitor.cpu, 4)
        return result

    def _audit_counts(self, recorded: Counter[str]) -> dict[str, float]:
        """The audit log's view, next to ours: agent patches must agree within one per claim."""
        if self._audit is None:
            return {}
        counts = self._audit.count(self._namespace, operator_user_agent=self._operator_user_agent)
        self._audit_verbs = dict(counts.operator_verbs)
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

    def close(self) -> None:
        """Stop the monitor (idempotent)."""
        self.monitor.close()


def not_the_operators(history: History) -> tuple[Outcome, str] | None:
    """Why violations in ``history`` are no verdict on the operator — (outcome, first line) —
    or None: a dependency was down (an infrastructure error naming it), or the operator's
    process was stopped by someone other than the framework (inconclusive)."""
    end = max((e.t for e in history), default=time.time())
    down = dependency_outages(history)
    if down:
        return "error", (
            "INFRASTRUCTURE: a dependency of the operator was unavailable during the scenario: "
            f"{describe(down, end)}; the violations below are not the operator's verdict"
        )
    frozen = external_freezes(history)
    if frozen:
        return "inconclusive", (
            "INCONCLUSIVE: the operator's process was stopped by someone other than the "
            f"framework: pid {describe(frozen, end)}; the violations below are not "
            "a verdict"
        )
    return None


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
        head = (
            f"{len(failed)} invariant(s) violated by {result.operator_target}: {ids} "
            f"[bugs {describe_bugs(result.bugs) or '-'}]; {retries}; seed {result.seed}"
        )
    elif missed:
        head = f"INCONCLUSIVE on {result.operator_target}: {missed[0]}; {retries}"
    else:
        head = f"all invariants held on {result.operator_target}; {retries}"
    lines = [head]
    lines += ["  " + _verdict_line(v, history.start) for v in failed]
    lines += [f"  {m}" for m in missed[1:]]
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
