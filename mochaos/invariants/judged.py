"""The history as the invariants judge it: in the apiserver's order, on the operator's clock.

Two corrections of what the recorder saw, both about the observer, never about the rules:

- *Order.* The recorder merges one watch stream per kind; each stream is in order, but a
  pod's change may arrive before the claim change the apiserver made just before it (a
  busy machine delays one stream, a frozen apiserver buffers all of them). Changes are
  judged in resourceVersion order (one etcd: its revisions order every write); Events
  (which a cluster may keep in an etcd of their own) and the other entries keep their
  places.
- *Clock.* While the apiserver does not answer (the recorder's outage periods,
  mochaos.observe.availability) nobody can act, and while a dependency of the operator is
  down or the operator's process is stopped (mochaos.observe.periods) the operator cannot —
  nor can it see while a scenario's interposer holds back its view (mochaos.observe.
  interposed) — so deadlines, graces and windows are measured on a clock that leaves those
  periods out (overlapping ones merged), and what the operator logged within them (its
  retries while it could not act or see) is not counted. Violations are reported back on
  the wall clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from mochaos.faults import FAULTS
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import (
    DEPENDENCY_OUTAGE,
    OPERATOR_FREEZE,
    PERIOD_KINDS,
    ActionRecord,
    ApiCall,
    Change,
    Entry,
    History,
    LogRecord,
    PeriodKind,
)

Interval = tuple[float, float]
PAUSE_SLACK = 1.0
"""Seconds a freeze may start after the framework's pause action was recorded, or end after
its length, and still be that pause (the probe looks every quarter second)."""


@dataclass(frozen=True)
class Period:
    """A period recorded by its start and end entries (``end`` is infinite while open)."""

    start: float
    end: float
    what: str
    """Whose period: the dependency's name, the operator's pid, ``apiserver``."""
    why: str = ""


def periods(history: History, kind: PeriodKind) -> list[Period]:
    """The periods of ``kind`` in ``history``, per subject; an end pairs with its subject's
    open start, one still open at the end runs to infinity."""
    found: list[Period] = []
    opened: dict[str, tuple[float, str]] = {}
    for edge in sorted(history.period_edges(kind), key=lambda e: e.t):
        if edge.edge == "start":
            opened.setdefault(edge.subject, (edge.t, edge.reason))
        elif edge.subject in opened:
            start, why = opened.pop(edge.subject)
            found.append(Period(start, max(edge.t, start), edge.subject, why))
    found += [Period(t, math.inf, what, why) for what, (t, why) in opened.items()]
    return sorted(found, key=lambda p: p.start)


def dependency_outages(history: History) -> list[Period]:
    """The periods a dependency of the operator was unavailable."""
    return periods(history, DEPENDENCY_OUTAGE)


def freezes(history: History) -> list[Period]:
    """The periods the operator's process was stopped."""
    return periods(history, OPERATOR_FREEZE)


def external_freezes(history: History) -> list[Period]:
    """The freezes that are not the framework's own (a fault that freezes the operator,
    recorded just before, for about as long)."""
    pauses = [
        (a.t, a.t + float(a.params.get("seconds", 0)))
        for a in history
        if isinstance(a, ActionRecord) and a.fault in FAULTS and FAULTS[a.fault].freezes_operator
    ]  # fmt: skip
    return [
        f for f in freezes(history)
        if not any(s - PAUSE_SLACK <= f.start <= s + PAUSE_SLACK and f.end <= e + PAUSE_SLACK
                   for s, e in pauses)
    ]  # fmt: skip


def describe(found: list[Period], now: float) -> str:
    """``matrixone for 20.3s (not running); kruise for 5s and not back (…)``, for messages
    (``now``: when an open period is described)."""
    parts = []
    for p in found:
        span = (f"for {p.end - p.start:.1f}s" if math.isfinite(p.end)
                else f"for {max(now - p.start, 0):.0f}s and not back")  # fmt: skip
        parts.append(f"{p.what} {span}" + (f" ({p.why})" if p.why else ""))
    return "; ".join(parts)


def _merged(intervals: list[Interval]) -> tuple[Interval, ...]:
    out: list[Interval] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return tuple(out)


@dataclass(frozen=True)
class OperatorClock:
    """Maps wall time to operator time (outages left out) and back."""

    outages: tuple[Interval, ...] = ()

    @classmethod
    def of(cls, history: History) -> OperatorClock:
        """The periods recorded in ``history`` whose kind stops the operator's clock (the
        apiserver's outages, the dependencies', the operator's freezes), merged (one still
        open runs to infinity)."""
        found = [p for k in PERIOD_KINDS.values() if k.stops_clock for p in periods(history, k)]
        return cls(_merged([(p.start, p.end) for p in found]))

    def stopped(self, t: float) -> bool:
        """Whether wall time ``t`` falls strictly inside a period the clock leaves out."""
        return any(start < t < end for start, end in self.outages)

    def operator_time(self, t: float) -> float:
        """Wall time ``t`` minus the outage time before it (a moment inside an outage maps
        to the outage's start)."""
        return t - sum(min(t, end) - start for start, end in self.outages if start < t)

    def wall_time(self, c: float) -> float:
        """The last wall moment whose operator time is ``c`` (the end of an outage that
        starts at ``c``)."""
        shift = 0.0
        for start, end in self.outages:
            if c < start - shift:
                break
            if c == start - shift:
                return end if math.isfinite(end) else start
            shift += end - start
        return c + shift


def _retry(entry: Entry) -> bool:
    """A log record, or a refused request of the operator's: what a retry leaves behind."""
    return isinstance(entry, LogRecord) or (isinstance(entry, ApiCall) and entry.status >= 400)


def judged(history: History) -> tuple[History, OperatorClock]:
    """The history to judge (see the module docstring) and the clock it is on. What the
    operator logged, and the writes of its that were refused, while its clock stood still (it
    could not act, or not see) are left out: its retries then are no verdict's."""
    clock = OperatorClock.of(history)
    entries = [e for e in history if not (_retry(e) and clock.stopped(e.t))]
    slots = [i for i, e in enumerate(entries) if isinstance(e, Change) and e.kind != "Event"]
    in_rv_order = sorted((entries[i] for i in slots), key=lambda c: c.rv)  # type: ignore[union-attr]
    for slot, change in zip(slots, in_rv_order, strict=True):
        entries[slot] = change
    if clock.outages:
        entries = [replace(e, t=clock.operator_time(e.t)) for e in entries]
    return History(entries), clock


def on_wall_clock(verdict: Verdict, clock: OperatorClock) -> Verdict:
    """The verdict with its violation's time back on the wall clock."""
    if verdict.violation is None or not clock.outages:
        return verdict
    return replace(
        verdict, violation=replace(verdict.violation, t=clock.wall_time(verdict.violation.t))
    )
