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

from mochaos.invariants.base import InvariantBase, Judge
from mochaos.invariants.facts import CLAIM, CLAIMSET, POD, Facts
from mochaos.invariants.options import validate_options
from mochaos.types import ActionRecord, Change, CheckOptions, Entry, Verdict

ACTIVE_KINDS = (CLAIM, CLAIMSET, POD)
"""The kinds whose changes count as the system moving (the kinds the invariants judge)."""


class Checker:
    """Judges one history incrementally; see the module docstring.

    Not thread-safe: one feeder at a time (the caller holds a lock if threads share it).
    """

    def __init__(
        self, options: CheckOptions, invariants: Sequence[InvariantBase] | None = None
    ) -> None:
        from mochaos.invariants.registry import ALL

        validate_options(options)
        self.facts = Facts()
        self._judges: list[Judge] = [
            invariant.judge(options, self.facts) for invariant in invariants or ALL
        ]
        self._reported: set[str] = set()
        self._moves: list[tuple[float, int]] = []
        """Max-heap (negated time, rv) of the changes that may be the operator's."""

    def feed(self, entries: Iterable[Entry]) -> list[Verdict]:
        """Judge new entries (in ``seq`` order); return the verdicts that newly failed.

        An ActionRecord whose ``seq`` was already fed is that record completed (its
        write's resourceVersion or error filled in), not a new entry.
        """
        facts, judges = self.facts, self._judges
        for entry in entries:
            if isinstance(entry, ActionRecord) and entry.seq <= facts.last_seq:
                facts.learn(entry)
                for judge in judges:
                    judge.amend(entry)
                continue
            for judge in judges:
                judge.before(entry)
            prev = None
            if isinstance(entry, Change):
                prev = facts.world.apply(entry)
                if entry.kind in ACTIVE_KINDS and entry.rv not in facts.own_rvs:
                    heapq.heappush(self._moves, (-entry.t, entry.rv))
            elif isinstance(entry, ActionRecord):
                facts.learn(entry)
            facts.advance(entry)
            for judge in judges:
                judge.after(entry, prev)
        return self._newly_failed(self.verdicts())

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


def evaluate(
    history: Iterable[Entry], options: CheckOptions, *, final: bool, now: float | None = None
) -> list[Verdict]:
    """One Verdict per invariant, in ``ALL`` order: every entry fed, then judged.

    ``final=False`` is the continuous evaluation during a run: settle-only
    invariants are skipped ("evaluated at settle") and nothing is reported whose
    deadline has not passed by the history's last entry, or by ``now`` when given.
    ``final=True`` is the settle evaluation at the end of the scenario.
    """
    checker = Checker(options)
    checker.feed(history)
    return checker.verdicts(now=now, final=final)
