"""conflicts-resolve (hot loops): a write the operator retries ends up landing.

Reads the operator's own requests as the interposer in front of the apiserver saw them
(``ApiCall`` entries; a run without the interposer has none, and the invariant says so).
Per object written (resource, subresource, name), it counts the operator's failed writes
in a row: an update, patch or delete answered 4xx/5xx. A write of that object that
succeeds ends the streak: an optimistic-concurrency conflict (409) that is retried and
resolves is how controllers work, even a burst of them (the real pool's CNSet update lost
six races in 0.4 s while the CNSet controller rewrote its status, then landed). A streak of
more than ``conflict_budget`` failures still unresolved ``grace`` seconds after its first is
a write that cannot succeed, retried without progress.

Not counted: a create answered 409 (AlreadyExists: the object is there, which is what the
create wanted), a delete answered 404 (already gone), and failures the interposer itself
injected (a scenario's fail-write fault: the operator's answer to those is judged by the
other invariants).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from mochaos.config import CheckOptions
from mochaos.invariants.base import InvariantBase, Judge
from mochaos.invariants.facts import Facts, Obj
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import ApiCall, Entry

WRITES = frozenset({"create", "update", "patch", "delete"})
INJECTED = "failed"
"""ApiCall.action of a failure the interposer made up (a fail rule's)."""


def failed_write(call: ApiCall) -> bool:
    """Whether ``call`` is a write of the operator's that the apiserver refused and that
    counts towards a streak (see the module docstring)."""
    if call.verb not in WRITES or call.status < 400 or call.action == INJECTED:
        return False
    if call.verb == "create" and call.status == 409:
        return False
    return not (call.verb == "delete" and call.status == 404)


@dataclass
class _Streak:
    first: float
    statuses: Counter[int] = field(default_factory=Counter)
    verbs: set[str] = field(default_factory=set)

    @property
    def length(self) -> int:
        return sum(self.statuses.values())


class ConflictsResolve(InvariantBase):
    """The operator's failed writes to one object never run more than the budget in a row."""

    id = "conflicts-resolve"
    bugs = ()
    rank = 12

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Fail at the failed write that makes a streak exceed the budget."""
        return _Judge(self, options, facts)


class _Judge(Judge):
    def __init__(self, invariant: InvariantBase, options: CheckOptions, facts: Facts) -> None:
        super().__init__(invariant, options, facts)
        self.streaks: dict[tuple[str, str, str], _Streak] = {}
        self.writes = 0
        self.failed = 0
        self.resolved = 0
        self.failure: Verdict | None = None

    def after(self, entry: Entry, prev: Obj | None) -> None:
        if self.failure is not None or not isinstance(entry, ApiCall):
            return
        if entry.verb not in WRITES or entry.status == 0:
            return
        self.writes += 1
        key = (entry.resource, entry.subresource, entry.name)
        if 200 <= entry.status < 300:
            if self.streaks.pop(key, None) is not None:
                self.resolved += 1
            return
        if not failed_write(entry):
            return
        self.failed += 1
        streak = self.streaks.setdefault(key, _Streak(first=entry.t))
        streak.statuses[entry.status] += 1
        streak.verbs.add(entry.verb)
        if self._stuck(streak, entry.t):
            self.failure = self._fail(key, streak, entry.t, entry.seq)

    def _stuck(self, streak: _Streak, now: float) -> bool:
        """Over the budget of refusals, and unresolved for longer than the grace."""
        options = self.options
        return streak.length > options.conflict_budget and now - streak.first > options.grace

    def decided(self, now: float) -> bool:
        """Over budget once: the failure stays."""
        return self.failure is not None

    def open(self, now: float) -> bool:
        """A run of refusals over the budget is unresolved: its grace may still run out."""
        budget = self.options.conflict_budget
        return any(streak.length > budget for streak in self.streaks.values())

    def verdict(self, *, now: float | None, final: bool) -> Verdict:
        if self.failure is not None:
            return self.failure
        end = self.facts.end if now is None else max(now, self.facts.end)
        for key, streak in self.streaks.items():
            if self._stuck(streak, end):
                return self._fail(key, streak, end, self.facts.last_seq)
        if not self.writes:
            return self.invariant.passed("no write of the operator's recorded (no interposer)")
        note = (f"{self.writes} write(s) of the operator's, {self.failed} refused; "
                f"{self.resolved} run(s) of refusals resolved")  # fmt: skip
        if self.streaks:
            note += f", {len(self.streaks)} within budget at the end"
        return self.invariant.passed(note)

    def _fail(self, key: tuple[str, str, str], streak: _Streak, t: float, seq: int) -> Verdict:
        resource, sub, name = key
        what = f"{resource}/{name}" + (f"/{sub}" if sub else "")
        statuses = ", ".join(f"{code}×{n}" for code, n in sorted(streak.statuses.items()))
        verbs = "/".join(sorted(streak.verbs))
        options = self.options
        return self.invariant.failed(
            t=t,
            seq=seq,
            objects=(what,),
            message=(
                f"{streak.length} {verbs} of {what} refused in a row over "
                f"{t - streak.first:.1f}s, none landing between (budget "
                f"{options.conflict_budget} refusals unresolved after {options.grace:g}s; "
                f"answers {statuses})"
            ),
        )


INVARIANT = ConflictsResolve()
