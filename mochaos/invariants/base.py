"""What every invariant shares: its identity, verdict helpers, and deadline bookkeeping.

Time-based invariants open an obligation when something starts (a deletion, a
breach, a migration) and close it when it resolves. An obligation fails only
once an entry later than its deadline has been seen, so a history that ends
before a deadline never reports it (continuous evaluation stays quiet).
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from mochaos.types import CheckOptions, History, Verdict, Violation


class InvariantBase(ABC):
    """An invariant (mochaos.types.Invariant) with the verdict helpers its check uses."""

    id: str = ""
    severity: str = "error"
    bugs: tuple[str, ...] = ()
    at_settle_only: bool = False

    @abstractmethod
    def check(self, history: History, options: CheckOptions, *, final: bool = True) -> Verdict:
        """Judge ``history``; ``final=False`` judges only what later entries cannot change."""

    def passed(self, note: str = "") -> Verdict:
        """A passing verdict of this invariant."""
        return Verdict(self.id, "pass", self.bugs, self.severity, None, note)

    def failed(self, *, t: float, seq: int, objects: tuple[str, ...], message: str) -> Verdict:
        """A failing verdict with its first violation."""
        violation = Violation(t=t, seq=seq, objects=objects, message=message)
        return Verdict(self.id, "fail", self.bugs, self.severity, violation)

    def skipped(self, note: str) -> Verdict:
        """A verdict for an invariant that could not apply to this history."""
        return Verdict(self.id, "skipped", self.bugs, self.severity, None, note)

    def __repr__(self) -> str:
        return f"<invariant {self.id}>"


@dataclass(frozen=True, slots=True)
class Obligation:
    """Something that must resolve by ``deadline``; ``detail`` is the invariant's own data."""

    key: Hashable
    start: float
    deadline: float
    seq: int
    detail: Any = None


class Deadlines:
    """Open obligations by key, expiring in deadline order."""

    def __init__(self) -> None:
        self._open: dict[Hashable, Obligation] = {}
        self._heap: list[tuple[float, int, Obligation]] = []
        self.opened = 0

    def open(
        self, key: Hashable, *, start: float, within: float, seq: int, detail: Any = None
    ) -> None:
        """Open an obligation due ``within`` seconds after ``start``; no-op if ``key`` is open."""
        if key in self._open:
            return
        obligation = Obligation(key, start, start + within, seq, detail)
        self._open[key] = obligation
        self.opened += 1
        heapq.heappush(self._heap, (obligation.deadline, self.opened, obligation))

    def close(self, key: Hashable) -> None:
        """Resolve the obligation of ``key`` (no-op if none is open)."""
        self._open.pop(key, None)

    def get(self, key: Hashable) -> Obligation | None:
        """The open obligation of ``key``, if any."""
        return self._open.get(key)

    def expired(self, now: float) -> Obligation | None:
        """Remove and return the open obligation with the earliest deadline before ``now``."""
        while self._heap and self._heap[0][0] < now:
            obligation = heapq.heappop(self._heap)[2]
            if self._open.get(obligation.key) is obligation:
                del self._open[obligation.key]
                return obligation
        return None

    @property
    def pending(self) -> int:
        """How many obligations are still open."""
        return len(self._open)

    def summary(self, what: str) -> str:
        """A pass note: how many obligations were seen and how many are still open."""
        note = f"{self.opened} {what}"
        if self.pending:
            note += f"; {self.pending} still open, deadline not reached by the end of the history"
        return note
