"""The history as the invariants judge it: in the apiserver's order, on the operator's clock.

Two corrections of what the recorder saw, both about the observer, never about the rules:

- *Order.* The recorder merges one watch stream per kind; each stream is in order, but a
  pod's change may arrive before the claim change the apiserver made just before it (a
  busy machine delays one stream, a frozen apiserver buffers all of them). Changes are
  judged in resourceVersion order (one etcd: its revisions order every write); Events
  (which a cluster may keep in an etcd of their own) and the other entries keep their
  places.
- *Clock.* While the apiserver does not answer (the recorder's outage markers,
  mochaos.observe.availability) nobody can act, so deadlines, graces and windows are
  measured on a clock that leaves those periods out. Violations are reported back on the
  wall clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from mochaos.types import APISERVER_AVAILABLE, APISERVER_UNAVAILABLE, Change, History, Verdict

Interval = tuple[float, float]


@dataclass(frozen=True)
class OperatorClock:
    """Maps wall time to operator time (outages left out) and back."""

    outages: tuple[Interval, ...] = ()

    @classmethod
    def of(cls, history: History) -> OperatorClock:
        """The outages recorded in ``history`` (one still open runs to infinity)."""
        found: list[Interval] = []
        opened: float | None = None
        for marker in sorted(history.markers(), key=lambda m: m.t):
            if marker.label == APISERVER_UNAVAILABLE and opened is None:
                opened = marker.t
            elif marker.label.startswith(APISERVER_AVAILABLE) and opened is not None:
                found.append((opened, max(marker.t, opened)))
                opened = None
        if opened is not None:
            found.append((opened, math.inf))
        return cls(tuple(found))

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
