"""What every invariant shares: its identity, its incremental judge, and deadline bookkeeping.

An invariant hands out a :class:`Judge` that reads a history one entry at a time
(:func:`feed` drives it, for ``check`` and for the incremental checker). Time-based
judges open an obligation when something starts (a deletion, a breach, a migration)
and close it when it resolves; an obligation fails once an entry later than its
deadline has been seen, or, when asked with the clock's ``now``, once ``now`` passed it.
"""

from __future__ import annotations

import heapq
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mochaos.config import CheckOptions
from mochaos.invariants.facts import Facts, Obj
from mochaos.invariants.options import validate_options
from mochaos.invariants.verdict import Verdict, Violation
from mochaos.observe.history import ActionRecord, Change, Entry, History


class InvariantBase(ABC):
    """An invariant: a factory of judges and the verdict helpers."""

    id: str = ""
    severity: str = "error"
    bugs: tuple[str, ...] = ()
    """The IDs of mochaos.bugs.BUGS (docs/bugs.md) this invariant catches."""
    at_settle_only: bool = False
    rank: int = 1000
    """Where its verdict comes in reports (ascending; ties by ID): the design's ten are 1-10,
    an invariant that does not say comes after them."""

    @abstractmethod
    def judge(self, options: CheckOptions, facts: Facts) -> Judge:
        """A fresh judge of this invariant over the entries ``facts`` sees."""

    def check(self, history: History, options: CheckOptions, *, final: bool = True) -> Verdict:
        """Judge ``history``; ``final=False`` judges only what later entries cannot change."""
        validate_options(options)
        facts = Facts()
        judge = self.judge(options, facts)
        feed(facts, (judge,), history)
        return judge.verdict(now=None, final=final)

    def passed(self, note: str) -> Verdict:
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


class Judge:
    """One invariant's state over one history, fed entry by entry in ``seq`` order.

    For each new entry the checker calls :meth:`before`, folds a Change into the
    shared world, then calls :meth:`after`; an action record completed later (its
    write's resourceVersion arrived) comes again through :meth:`amend`. Each entry
    is looked at a bounded number of times, so judging a history is linear in it.
    """

    def __init__(self, invariant: InvariantBase, options: CheckOptions, facts: Facts) -> None:
        self.invariant = invariant
        self.options = options
        self.facts = facts

    def before(self, entry: Entry) -> None:
        """A new entry, before the world applied it."""

    def after(self, entry: Entry, prev: Obj | None) -> None:
        """A new entry, after the world applied it (``prev``: a changed object's old version)."""

    def amend(self, action: ActionRecord) -> None:
        """An action record seen earlier, now with its write's result."""

    @abstractmethod
    def verdict(self, *, now: float | None, final: bool) -> Verdict:
        """The verdict so far; ``now`` (wall time) also fails deadlines passed since the last
        entry; ``final`` judges at settle time."""

    def in_flight(self, now: float) -> list[str]:
        """What this judge still waits for at ``now`` (deadline not passed)."""
        return []

    def decided(self, now: float) -> bool:
        """Whether no later entry can change this judge's verdict at ``now``: a failure
        that stays, whatever follows (False unless a judge knows better)."""
        return False

    def open(self, now: float) -> bool:
        """Whether something under way at ``now`` may still fail this judge (an obligation
        whose deadline has not passed, a window still counting); settle-only judges and
        judges that fail at once on what they see are never open."""
        return False


def feed(
    facts: Facts,
    judges: Sequence[Judge],
    entries: Iterable[Entry],
    *,
    on_change: Callable[[Change, Obj | None], None] | None = None,
) -> None:
    """Feed new entries (in ``seq`` order) to ``judges`` over the shared ``facts``.

    An ActionRecord whose ``seq`` was already fed is that record completed (its write's
    resourceVersion or error filled in), not a new entry: judges are told through
    ``amend``. ``on_change`` sees each Change once the world has applied it, with the
    object as it was before (None when new).
    """
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
            if on_change is not None:
                on_change(entry, prev)
        elif isinstance(entry, ActionRecord):
            facts.learn(entry)
        facts.advance(entry)
        for judge in judges:
            judge.after(entry, prev)


class DeadlineJudge(Judge):
    """A judge whose obligations fail when their deadline passes; the first failure stays."""

    seen: str = "obligation(s) seen"
    """What the pass note counts."""

    def __init__(self, invariant: InvariantBase, options: CheckOptions, facts: Facts) -> None:
        super().__init__(invariant, options, facts)
        self.deadlines = Deadlines()
        self.failure: Verdict | None = None

    def before(self, entry: Entry) -> None:
        """Fail at the first entry later than an open obligation's deadline."""
        if self.failure is None:
            late = self.deadlines.due(entry.t)
            if late is not None:
                self.failure = self.overdue(late, entry.seq)

    def decided(self, now: float) -> bool:
        """An obligation failed (or is past its deadline at ``now``): the first failure
        stays, later obligations cannot undo it."""
        return self.failure is not None or self.deadlines.due(now) is not None

    def open(self, now: float) -> bool:
        """An obligation is open and its deadline has not passed."""
        return bool(self.deadlines.in_time(now))

    @abstractmethod
    def overdue(self, late: Obligation, seq: int) -> Verdict:
        """The failing verdict of ``late``, revealed by the entry ``seq``."""

    def verdict(self, *, now: float | None, final: bool) -> Verdict:
        """The first failure; else one due at ``now``; else a pass counting obligations."""
        if self.failure is not None:
            return self.failure
        late = self.deadlines.due(now) if now is not None else None
        if late is not None:
            return self.overdue(late, self.facts.last_seq)
        return self.invariant.passed(self.deadlines.summary(self.seen))


@dataclass(frozen=True, slots=True)
class Obligation:
    """Something that must resolve by ``deadline``; ``detail`` is the invariant's own data."""

    key: Hashable
    start: float
    deadline: float
    detail: Any = None


class Deadlines:
    """Open obligations by key, due in deadline order."""

    def __init__(self) -> None:
        self._open: dict[Hashable, Obligation] = {}
        self._heap: list[tuple[float, int, Obligation]] = []
        self._in_time: dict[Hashable, Obligation] = {}
        """The open obligations not yet seen past their deadline by :meth:`in_time`."""
        self.opened = 0

    def open(self, key: Hashable, *, start: float, within: float, detail: Any = None) -> None:
        """Open an obligation due ``within`` seconds after ``start``; no-op if ``key`` is open."""
        if key in self._open:
            return
        obligation = Obligation(key, start, start + within, detail)
        self._open[key] = obligation
        self._in_time[key] = obligation
        self.opened += 1
        heapq.heappush(self._heap, (obligation.deadline, self.opened, obligation))

    def close(self, key: Hashable) -> None:
        """Resolve the obligation of ``key`` (no-op if none is open)."""
        self._open.pop(key, None)
        self._in_time.pop(key, None)

    def get(self, key: Hashable) -> Obligation | None:
        """The open obligation of ``key``, if any."""
        return self._open.get(key)

    def due(self, now: float) -> Obligation | None:
        """The open obligation with the earliest deadline, when that deadline is before ``now``.

        It stays open: an overdue obligation is still pending until it is closed.
        """
        while self._heap:
            deadline, _, obligation = self._heap[0]
            if self._open.get(obligation.key) is obligation:
                return obligation if deadline < now else None
            heapq.heappop(self._heap)  # closed or reopened since: drop the stale entry
        return None

    def in_time(self, now: float) -> list[Obligation]:
        """The open obligations whose deadline is after ``now``, in the order they were opened.

        ``now`` must not go back between calls: an obligation found past its deadline
        is left out of every later answer (it is still open and still fails).
        """
        late = [key for key, o in self._in_time.items() if o.deadline <= now]
        for key in late:
            del self._in_time[key]
        return list(self._in_time.values())

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
