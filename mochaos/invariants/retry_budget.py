"""retry-budget (hot loops): per object, retries within a sliding window stay within budget.

Counts, per claim, its finalize retries (``vocabulary.finalize_retries``: one per
Finalize pass), and, per object, its error-level records. More than
``retry_budget`` of either within any ``retry_window`` seconds is a hot loop;
the violation is the record that exceeded the budget. Errors that only say
the apiserver could not be reached are the infrastructure's, not a hot loop of
the operator's, and are not counted; nor are errors that name no namespace: they
are about no object of the test (a library logger inside the operator, e.g.
MatrixOne's HAKeeper client of an in-cluster operator serving every namespace).
Nor are optimistic-concurrency conflicts ("Operation cannot be fulfilled on …"): a
conflict logged by the reconciler of one object is about another object it wrote, and
whether it resolves is judged per object written by conflicts-resolve. Nor are the records
logged while a scenario held one of MatrixOne's components unreachable (a
``matrixone-fault`` period, and for one RPC timeout after it, the last call made before it
ended): the operator's passes then retry a dependency that cannot answer, on its
exponential backoff — which any controller-runtime operator runs past the budget in an
outage of a few seconds — so they show no hot loop; what the fault does to the operator's
work is judged by the other invariants, on a clock that keeps running.
"""

from __future__ import annotations

import math
from collections import deque

from mochaos.config import CheckOptions
from mochaos.ctrl.mo_components import RPC_TIMEOUT
from mochaos.invariants.base import InvariantBase, Judge
from mochaos.invariants.facts import CLAIM, Facts, Obj, ref
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import MATRIXONE_FAULT, Entry, LogRecord, PeriodEdge
from mochaos.observe.vocabulary import FINALIZE_ATTEMPT, LogKind, classify, error_text

_COUNTED = {LogKind.FINALIZE_ATTEMPT: "finalize", LogKind.ERROR: "error"}


class RetryBudget(InvariantBase):
    """Finalize passes per claim and error records per object stay within the budget."""

    id = "retry-budget"
    bugs = ()
    rank = 8

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Fail at the first record that exceeds the budget in its window."""
        return _Judge(self, options, facts)


class _Judge(Judge):
    def __init__(self, invariant: InvariantBase, options: CheckOptions, facts: Facts) -> None:
        super().__init__(invariant, options, facts)
        self.windows: dict[tuple[str, str, str], deque[float]] = {}
        self.counts = dict.fromkeys(_COUNTED.values(), 0)
        self.failure: Verdict | None = None
        self.faults: set[str] = set()
        """The MatrixOne components a scenario holds unreachable now."""
        self.faulted_until = -math.inf
        """The end of the last such period, plus one RPC timeout (a call made before it)."""
        self.left_out = 0

    def _fault(self, edge: PeriodEdge) -> None:
        if edge.edge == "start":
            self.faults.add(edge.subject)
        else:
            self.faults.discard(edge.subject)
            self.faulted_until = edge.t + self.options.scaled(RPC_TIMEOUT)

    def after(self, entry: Entry, prev: Obj | None) -> None:
        if isinstance(entry, PeriodEdge) and entry.period == MATRIXONE_FAULT.name:
            self._fault(entry)
        if self.failure is not None or not isinstance(entry, LogRecord) or not entry.name:
            return
        kind = _COUNTED.get(classify(entry))
        if kind is None or (kind == "error" and not entry.namespace):
            return
        if self.faults or entry.t <= self.faulted_until:
            self.left_out += 1  # a retry of what the scenario made unreachable
            return
        self.counts[kind] += 1
        times = self.windows.setdefault((kind, entry.namespace, entry.name), deque())
        times.append(entry.t)
        while entry.t - times[0] > self.options.retry_window:
            times.popleft()
        if len(times) > self.options.retry_budget:
            self.failure = self._fail(kind, entry, len(times))

    def decided(self, now: float) -> bool:
        """Over budget once: the failure stays."""
        return self.failure is not None

    def open(self, now: float) -> bool:
        """Some object was retried within the last window: more retries may exceed it."""
        window = self.options.retry_window
        return any(times and now - times[-1] <= window for times in self.windows.values())

    def verdict(self, *, now: float | None, final: bool) -> Verdict:
        if self.failure is not None:
            return self.failure
        faulted = (f"; {self.left_out} left out, logged while MatrixOne was made unreachable"
                   if self.left_out else "")  # fmt: skip
        return self.invariant.passed(
            f"{self.counts['finalize']} '{FINALIZE_ATTEMPT}' and {self.counts['error']} "
            f"error record(s), within budget{faulted}"
        )

    def _fail(self, kind: str, record: LogRecord, count: int) -> Verdict:
        if kind == "finalize":
            obj = ref(CLAIM, record.name)
            what = f"{count} '{FINALIZE_ATTEMPT}' records for CNClaim {record.name}"
        else:
            obj = record.name
            what = f"{count} error-level records for {record.namespace}/{record.name}"
        options = self.options
        return self.invariant.failed(
            t=record.t,
            seq=record.seq,
            objects=(obj,),
            message=(
                f"{what} within {options.retry_window:g}s (budget {options.retry_budget}); "
                f"last: {error_text(record)[:120]}"
            ),
        )


INVARIANT = RetryBudget()
