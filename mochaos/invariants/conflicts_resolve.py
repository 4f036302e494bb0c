"""conflicts-resolve (hot loops): a write the operator retries ends up landing.

Reads the operator's own requests as the interposer in front of the apiserver saw them
(``ApiCall`` entries; a run without the interposer has none, and the invariant says so).
Per object written (resource, subresource, name), it counts the operator's failed writes
in a row: an update, patch or delete answered 4xx/5xx. A write of that object that
succeeds ends the streak: an optimistic-concurrency conflict (409) that is retried and
resolves is how controllers work. More than ``conflict_budget`` failures in a row is a
write that cannot succeed, retried without progress.

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
    verbs: Counter[str] = field(default_factory=Counter)

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
        streak.verbs[entry.verb] += 1
        if streak.length > self.options.conflict_budget:
            self.failure = self._fail(key, streak, entry)

    def decided(self, now: float) -> bool:
        """Over budget once: the failure stays."""
        return self.failure is not None

    def verdict(self, *, now: float | None, final: bool) -> Verdict:
        if self.failure is not None:
            return self.failure
        if not self.writes:
            return self.invariant.passed("no write of the operator's recorded (no interposer)")
        note = (f"{self.writes} write(s) of the operator's, {self.failed} refused; "
                f"{self.resolved} run(s) of refusals resolved")  # fmt: skip
        if self.streaks:
            note += f", {len(self.streaks)} within budget at the end"
        return self.invariant.passed(note)

    def _fail(self, key: tuple[str, str, str], streak: _Streak, call: ApiCall) -> Verdict:
        resource, sub, name = key
        what = f"{resource}/{name}" + (f"/{sub}" if sub else "")
        statuses = ", ".join(f"{code}×{n}" for code, n in sorted(streak.statuses.items()))
        verbs = "/".join(sorted(streak.verbs))
        return self.invariant.failed(
            t=call.t,
            seq=call.seq,
            objects=(what,),
            message=(
                f"{streak.length} {verbs} of {what} refused in a row over "
                f"{call.t - streak.first:.1f}s, none landing between (budget "
                f"{self.options.conflict_budget}; answers {statuses})"
            ),
        )


INVARIANT = ConflictsResolve()
