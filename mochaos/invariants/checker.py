"""The incremental checker: every invariant over a growing history, each entry judged once.

``feed`` the entries as they are recorded (an action record again when its write
returns); ``verdicts`` at any time, with the clock's ``now`` while the run goes on
(deadlines passed since the last entry fail too) or ``final`` at settle. The
work is linear in the history, however often verdicts are asked for. The same
deadline tracking answers what is still in flight and when the system last moved.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any

from mochaos.config import CheckOptions
from mochaos.invariants.base import InvariantBase, Judge, feed
from mochaos.invariants.facts import CLAIM, CLAIMSET, POD, Facts, Obj
from mochaos.invariants.options import validate_options
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import Change, Entry

ACTIVE_KINDS = (CLAIM, CLAIMSET, POD)
"""The kinds whose changes count as the system moving (the kinds the invariants judge)."""
BOOKKEEPING = frozenset({"resourceVersion", "managedFields"})
"""Fields a write changes without moving the object."""


class IncrementalChecker:
    """Judges one history incrementally with ``invariants`` (usually ``registry.ALL``); see
    the module docstring.

    Not thread-safe: one feeder at a time (the caller holds a lock if threads share it).
    """

    def __init__(self, options: CheckOptions, invariants: Sequence[InvariantBase]) -> None:
        validate_options(options)
        self.facts = Facts()
        self._judges: list[Judge] = [
            invariant.judge(options, self.facts) for invariant in invariants
        ]
        self._reported: set[str] = set()
        self._moves: list[tuple[float, int]] = []
        """Max-heap (negated time, rv) of the changes that may be the operator's."""

    def feed(self, entries: Iterable[Entry]) -> list[Verdict]:
        """Judge new entries (in ``seq`` order); return the verdicts that newly failed.

        An ActionRecord whose ``seq`` was already fed is that record completed (its
        write's resourceVersion or error filled in), not a new entry.
        """
        feed(self.facts, self._judges, entries, on_change=self._note_move)
        return self._newly_failed(self.verdicts())

    def _note_move(self, change: Change, before: Obj | None) -> None:
        if (
            change.kind in ACTIVE_KINDS and change.rv not in self.facts.own_rvs
            and moved(before, change)
        ):  # fmt: skip
            heapq.heappush(self._moves, (-change.t, change.rv))

    def verdicts(self, *, now: float | None = None, final: bool = False) -> list[Verdict]:
        """One verdict per invariant, in the order given.

        ``final=False`` is the continuous evaluation: settle-only invariants are
        skipped and nothing is reported whose deadline has not passed by the last
        entry, or by ``now`` when given (wall time). ``final=True`` judges at settle.
        """
        return [judge.verdict(now=now, final=final) for judge in self._judges]

    def poll(self, now: float) -> list[Verdict]:
        """The verdicts that newly failed by ``now`` (deadlines passed since the last entry)."""
        return self._newly_failed(self.verdicts(now=now))

    def in_flight(self, now: float) -> list[str]:
        """Claims being deleted or migrating whose deadline has not passed at ``now``."""
        return [item for judge in self._judges for item in judge.in_flight(now)]

    def undecided(self, now: float) -> list[str]:
        """What may still change a verdict at ``now``: for every invariant that has not failed
        for good, what it has in flight or that it is open (see ``Judge.open``). A deadline
        of an invariant that already failed for good cannot change its verdict."""
        found = []
        for judge in self._judges:
            if judge.decided(now):
                continue
            items = judge.in_flight(now)
            found += items or ([f"{judge.invariant.id} open"] if judge.open(now) else [])
        return found

    def decided(self, now: float) -> list[str]:
        """The invariants whose verdict no later entry can change (they failed for good)."""
        return [judge.invariant.id for judge in self._judges if judge.decided(now)]

    def last_move(self) -> float:
        """Time of the latest change of a claim, claim set or pod not written by us (0.0: none)."""
        while self._moves and self._moves[0][1] in self.facts.own_rvs:
            heapq.heappop(self._moves)
        return -self._moves[0][0] if self._moves else 0.0

    @property
    def end(self) -> float:
        """Time of the last entry fed (0.0 before any)."""
        return self.facts.end

    def _newly_failed(self, verdicts: list[Verdict]) -> list[Verdict]:
        new = [v for v in verdicts if v.failed and v.invariant not in self._reported]
        self._reported.update(v.invariant for v in new)
        return new


def moved(before: Obj | None, change: Change) -> bool:
    """Whether ``change`` moved its object: created, deleted, or anything changed but its
    bookkeeping and the order of its lists. The real CNClaimSet controller rewrites
    ``status.claims`` in another order on many of its passes; that is no move, and counting
    it would keep a settle from ever seeing the system calm."""
    if before is None or change.event != "MODIFIED":
        return True
    return _canonical(before) != _canonical(change.obj)


def _canonical(value: Any) -> Any:
    """``value`` without bookkeeping fields, with every list as a sorted tuple."""
    if isinstance(value, dict):
        return tuple(sorted((k, _canonical(v)) for k, v in value.items() if k not in BOOKKEEPING))
    if isinstance(value, list):
        return tuple(sorted((_canonical(v) for v in value), key=repr))
    return value


def evaluate(
    history: Iterable[Entry],
    options: CheckOptions,
    invariants: Sequence[InvariantBase],
    *,
    final: bool,
    now: float | None = None,
) -> list[Verdict]:
    """One Verdict per invariant, in the order given: every entry fed, then judged.

    ``final=False`` is the continuous evaluation during a run: settle-only
    invariants are skipped ("evaluated at settle") and nothing is reported whose
    deadline has not passed by the history's last entry, or by ``now`` when given.
    ``final=True`` is the settle evaluation at the end of the scenario.
    """
    checker = IncrementalChecker(options, invariants)
    checker.feed(history)
    return checker.verdicts(now=now, final=final)
