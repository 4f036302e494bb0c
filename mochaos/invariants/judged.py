"""The history as the invariants judge it: in the apiserver's order, on the operator's clock.

Two corrections of what the recorder saw, both about the observer, never about the rules:

- *Order.* The recorder merges one watch stream per kind; each stream is in order, but a
  pod's change may arrive before the claim change the apiserver made just before it (a
  busy machine delays one stream, a frozen apiserver buffers all of them). Changes are
  judged in resourceVersion order (one etcd: its revisions order every write); Events
  (which a cluster may keep in an etcd of their own) and the other entries keep their
  places.
- *Clock.* While the apiserver does not answer (the recorder's outage markers,
  mochaos.observe.availability) nobody can act, and while a dependency of the operator is
  down or the operator's process is stopped (mochaos.observe.periods) the operator cannot,
  so deadlines, graces and windows are measured on a clock that leaves those periods out
  (overlapping ones merged). Violations are reported back on the wall clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import (
    APISERVER_AVAILABLE,
    APISERVER_UNAVAILABLE,
    DEPENDENCY_AVAILABLE,
    DEPENDENCY_UNAVAILABLE,
    OPERATOR_FROZEN,
    OPERATOR_THAWED,
    ActionRecord,
    Change,
    History,
)

Interval = tuple[float, float]
CLOCK_MARKERS = (
    APISERVER_UNAVAILABLE,
    APISERVER_AVAILABLE,
    DEPENDENCY_UNAVAILABLE,
    DEPENDENCY_AVAILABLE,
    OPERATOR_FROZEN,
    OPERATOR_THAWED,
)
"""The labels (prefixes) of the markers that stop and restart the operator's clock."""
PAUSE_SLACK = 1.0
"""Seconds a freeze may start after the framework's pause action was recorded, or end after
its length, and still be that pause (the probe looks every quarter second)."""


@dataclass(frozen=True)
class Period:
    """A period recorded by a start and an end marker (``end`` is infinite while open)."""

    start: float
    end: float
    what: str
    """Whose period: the dependency's name, the operator's pid, ``apiserver``."""
    why: str = ""


def periods(history: History, opens: str, closes: str) -> list[Period]:
    """The periods between markers labelled ``opens…`` and ``closes…``, per subject (the
    word after ``opens: ``, if any)."""
    found: list[Period] = []
    opened: dict[str, tuple[float, str]] = {}
    for marker in sorted(history.markers(), key=lambda m: m.t):
        label = marker.label
        if label.startswith(opens):
            what, why = _subject(label[len(opens) :])
            opened.setdefault(what, (marker.t, why))
        elif label.startswith(closes):
            what, _ = _subject(label[len(closes) :])
            if what not in opened:
                what = next(iter(opened), what)  # an end that names no subject closes the open
            if what in opened:
                start, why = opened.pop(what)
                found.append(Period(start, max(marker.t, start), what, why))
    found += [Period(t, math.inf, what, why) for what, (t, why) in opened.items()]
    return sorted(found, key=lambda p: p.start)


def _subject(rest: str) -> tuple[str, str]:
    """``": matrixone (not running)"`` → (``matrixone``, ``not running``); a label that goes on
    without ``": "`` (``" after 4.9s"``) names no subject: (``""``, ``""``)."""
    if not rest.startswith(": "):
        return "", ""
    name, _, why = rest[2:].partition(" ")
    return name, why.removeprefix("(").removesuffix(")")


def dependency_outages(history: History) -> list[Period]:
    """The periods a dependency of the operator was unavailable."""
    return periods(history, DEPENDENCY_UNAVAILABLE, DEPENDENCY_AVAILABLE)


def freezes(history: History) -> list[Period]:
    """The periods the operator's process was stopped."""
    return periods(history, OPERATOR_FROZEN, OPERATOR_THAWED)


def external_freezes(history: History) -> list[Period]:
    """The freezes that are not the framework's own pause fault (a ``pause_operator`` action
    recorded just before, for about as long)."""
    pauses = [
        (a.t, a.t + float(a.params.get("seconds", 0)))
        for a in history if isinstance(a, ActionRecord) and a.action == "pause_operator"
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
        """The apiserver's outages, the dependencies' and the operator's freezes recorded in
        ``history``, merged (one still open runs to infinity)."""
        found = [
            *periods(history, APISERVER_UNAVAILABLE, APISERVER_AVAILABLE),
            *dependency_outages(history),
            *freezes(history),
        ]
        return cls(_merged([(p.start, p.end) for p in found]))

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


def judged(history: History) -> tuple[History, OperatorClock]:
    """The history to judge (see the module docstring) and the clock it is on."""
    clock = OperatorClock.of(history)
    entries = list(history)
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
