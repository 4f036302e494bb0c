"""single-binding (#581, symptom 2): the operator never adds a reference to a held pod.

A violation is an operator write creating a NEW reference to a pod another live
claim already holds (by spec.podName or by the claimed-by label): a claim's
spec.podName set to it, or its label handed to a claim whose spec does not name
it. A relabel that follows the claim's own spec.podName (a migration target
taken by Sync) is not new, and our own writes (the injected fault, the agent's
patch) are never violations by themselves. Instantaneous: no grace. Our action
record may arrive after the change it caused; a suspect change is cleared then.
"""

from __future__ import annotations

from dataclasses import dataclass

from mochaos.config import CheckOptions
from mochaos.invariants.base import InvariantBase, Judge
from mochaos.invariants.facts import (
    CLAIM,
    POD,
    Facts,
    Obj,
    claimed_by,
    ref,
    spec_pod,
)
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import ActionRecord, Change, Entry


class SingleBinding(InvariantBase):
    """No operator write makes a second live claim reference a pod."""

    id = "single-binding"
    bugs = ("#581",)
    rank = 3

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Fail at the first operator write that references an already-held pod."""
        return _Judge(self, options, facts)


@dataclass(slots=True)
class _Suspect:
    """A change that breaks the invariant unless it turns out to be one of our writes."""

    verdict: Verdict
    cleared: bool = False


class _Judge(Judge):
    def __init__(self, invariant: InvariantBase, options: CheckOptions, facts: Facts) -> None:
        super().__init__(invariant, options, facts)
        self.suspects: list[_Suspect] = []
        self.by_rv: dict[int, list[_Suspect]] = {}
        self.first = 0
        """Index of the first suspect not cleared (all before it are)."""

    def before(self, entry: Entry) -> None:
        """Judge an operator change against the state just before it."""
        if (
            isinstance(entry, Change)
            and entry.kind in (POD, CLAIM)
            and entry.event != "DELETED"
            and entry.rv not in self.facts.own_rvs
        ):
            verdict = self._judge(entry)
            if verdict is not None:
                suspect = _Suspect(verdict)
                self.suspects.append(suspect)
                self.by_rv.setdefault(entry.rv, []).append(suspect)

    def after(self, entry: Entry, prev: Obj | None) -> None:
        if isinstance(entry, ActionRecord):
            self.amend(entry)

    def amend(self, action: ActionRecord) -> None:
        """Our write's change is not the operator's: clear it."""
        for suspect in self.by_rv.pop(action.write_rv, ()):  # type: ignore[arg-type]
            suspect.cleared = True

    def verdict(self, *, now: float | None, final: bool) -> Verdict:
        while self.first < len(self.suspects) and self.suspects[self.first].cleared:
            self.first += 1
        if self.first < len(self.suspects):
            return self.suspects[self.first].verdict
        return self.invariant.passed(
            "no operator write referenced a pod held by another live claim"
        )

    def _judge(self, change: Change) -> Verdict | None:
        world = self.facts.world
        if change.kind == CLAIM:
            claim, pod = change.name, spec_pod(change.obj)
            before = world.claim(claim)
            if not pod or (before is not None and spec_pod(before) == pod):
                return None
            how = f"spec.podName of CNClaim {claim} set to {pod}"
        else:
            claim, pod = claimed_by(change.obj), change.name
            before = world.pod(pod)
            if not claim or (before is not None and claimed_by(before) == claim):
                return None
            own = world.claim(claim)
            if own is not None and spec_pod(own) == pod:
                return None
            how = f"pod {pod} labelled claimed-by={claim} while its spec.podName is not {pod}"
        holders = world.holders(pod, besides=claim)
        if not holders:
            return None
        return self.invariant.failed(
            t=change.t,
            seq=change.seq,
            objects=(ref(CLAIM, claim), ref(POD, pod), *(ref(CLAIM, h) for h in holders)),
            message=f"{how}, but live CNClaim {', '.join(holders)} already holds it",
        )


INVARIANT = SingleBinding()
