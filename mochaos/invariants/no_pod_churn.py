"""no-pod-churn (hot loops): a pool does not create pods only to kill them.

A pool pod marked for deletion before it ever served (observe/churn.py says what marked
and served mean), within ``CHURN_STILLBORN`` seconds of its appearance, was killed before
its CN could start: a CN start for nothing. The real pool makes one such pod per bind of a
Pending claim (it counts the claim twice for a moment), which churn.py explains; more than
``churn_budget`` that nothing explains, of one pool within any ``retry_window`` seconds, is
the pool killing the replacements its CloneSet makes ([pool-churn], docs/bugs.md). A pod
marked later, still unserved, is the pool following demand (a claim set scaled down before
the pod could serve) and is not judged here.
"""

from __future__ import annotations

from collections import deque

from mochaos.config import CHURN_EXPLAIN_WITHIN, CHURN_STILLBORN, CheckOptions
from mochaos.invariants.base import InvariantBase, Judge
from mochaos.invariants.facts import POD, Facts, Obj, ref
from mochaos.invariants.verdict import Verdict
from mochaos.observe.churn import Churned, ChurnTracker
from mochaos.observe.history import Entry


class NoPodChurn(InvariantBase):
    """Pods of one pool marked for deletion without ever serving stay within the budget."""

    id = "no-pod-churn"
    bugs = ("pool-churn",)
    rank = 11

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Fail at the churned pod that exceeds the budget in its window."""
        return _Judge(self, options, facts)


class _Judge(Judge):
    def __init__(self, invariant: InvariantBase, options: CheckOptions, facts: Facts) -> None:
        super().__init__(invariant, options, facts)
        self.tracker = ChurnTracker(explain_within=options.scaled(CHURN_EXPLAIN_WITHIN))
        self.stillborn = options.scaled(CHURN_STILLBORN)
        self.counted = 0
        self.windows: dict[str, deque[Churned]] = {}
        self.failure: Verdict | None = None

    def after(self, entry: Entry, prev: Obj | None) -> None:
        churn = self.tracker.see(entry)
        if churn is None or churn.explained_by or churn.life > self.stillborn:
            return
        self.counted += 1
        if self.failure is not None:
            return
        window = self.windows.setdefault(churn.pool, deque())
        window.append(churn)
        while churn.marked - window[0].marked > self.options.retry_window:
            window.popleft()
        if len(window) > self.options.churn_budget:
            self.failure = self._fail(list(window))

    def decided(self, now: float) -> bool:
        """Over budget once: the failure stays."""
        return self.failure is not None

    def open(self, now: float) -> bool:
        """A pod churned within the last window: more may follow and exceed it."""
        window = self.options.retry_window
        return any(w and now - w[-1].marked <= window for w in self.windows.values())

    def verdict(self, *, now: float | None, final: bool) -> Verdict:
        if self.failure is not None:
            return self.failure
        churned = self.tracker.churned
        explained = sum(1 for c in churned if c.explained_by)
        return self.invariant.passed(
            f"{self.counted} pod(s) killed right after they appeared with nothing to explain "
            f"them, within budget ({len(churned)} marked before serving, {explained} explained "
            "by a Pending claim's bind)"
        )

    def _fail(self, churned: list[Churned]) -> Verdict:
        last = churned[-1]
        pods = ", ".join(
            f"{c.pod} ({c.how} {c.marked - c.created:.1f}s after it appeared)" for c in churned
        )
        options = self.options
        return self.invariant.failed(
            t=last.marked,
            seq=last.seq,
            objects=tuple(ref(POD, c.pod) for c in churned),
            message=(
                f"pool {last.pool}: {len(churned)} pod(s) killed right after they appeared, "
                f"no Pending claim's bind to explain them, within {options.retry_window:g}s "
                f"(budget {options.churn_budget}): {pods}"
            ),
        )


INVARIANT = NoPodChurn()
