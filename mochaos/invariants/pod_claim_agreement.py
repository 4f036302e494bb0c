"""pod-claim-agreement (PR #592 hole, B5): after settle, pods and claims agree on bindings.

In the final state every pod in phase Bound carries ``claimed-by=C`` for the
unique live claim C whose spec.podName names it, and every live Bound claim
names an existing Bound pod labelled for it. The violation points at the change
that produced the disagreement (the latest change of the objects involved);
the first such disagreement is reported.
"""

from __future__ import annotations

from dataclasses import dataclass

from mochaos.config import CheckOptions
from mochaos.ctrl.objects import claim_phase
from mochaos.invariants.base import InvariantBase, Judge
from mochaos.invariants.facts import (
    CLAIM,
    POD,
    Facts,
    Obj,
    World,
    claimed_by,
    pod_phase,
    ref,
    spec_pod,
)
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import Change, Entry


@dataclass(frozen=True, slots=True)
class _Offence:
    objects: tuple[tuple[str, str], ...]
    message: str


class PodClaimAgreement(InvariantBase):
    """Bound pods and live Bound claims name each other one to one in the final state."""

    id = "pod-claim-agreement"
    bugs = ("B5",)
    rank = 9
    at_settle_only = True

    def judge(self, options: CheckOptions, facts: Facts) -> _Judge:
        """Fail at the first disagreement in the final state (skipped while not final)."""
        return _Judge(self, options, facts)


class _Judge(Judge):
    def __init__(self, invariant: InvariantBase, options: CheckOptions, facts: Facts) -> None:
        super().__init__(invariant, options, facts)
        self.last: dict[tuple[str, str], Change] = {}

    def after(self, entry: Entry, prev: Obj | None) -> None:
        if isinstance(entry, Change):
            self.last[(entry.kind, entry.name)] = entry

    def verdict(self, *, now: float | None, final: bool) -> Verdict:
        if not final:
            return self.invariant.skipped("evaluated at settle")
        world, last = self.facts.world, self.last
        offences = [
            *(_pod_offence(world, n, p) for n, p in sorted(world.state.all(POD).items())),
            *(_claim_offence(world, n, c) for n, c in sorted(world.state.all(CLAIM).items())),
        ]
        found = [
            (max((last[k] for k in o.objects if k in last), key=lambda c: c.seq), o)
            for o in offences
            if o is not None
        ]
        if not found:
            return self.invariant.passed(
                "every Bound pod and live Bound claim agree in the final state"
            )
        produced, offence = min(found, key=lambda item: item[0].seq)
        return self.invariant.failed(
            t=produced.t,
            seq=produced.seq,
            objects=tuple(ref(kind, name) for kind, name in offence.objects),
            message=offence.message + f" ({len(found)} disagreement(s) in the final state)",
        )


def _pod_offence(world: World, name: str, pod: Obj) -> _Offence | None:
    """A Bound pod without exactly one live holder that its label names."""
    if pod_phase(pod) != "Bound":
        return None
    holders = [c for c in world.claims_naming(name) if world.live_claim(c) is not None]
    label = claimed_by(pod)
    if len(holders) == 1 and label == holders[0]:
        return None
    if not holders:
        message = f"pod {name} is Bound (claimed-by={label or '-'}) but no live CNClaim names it"
    elif len(holders) > 1:
        message = f"pod {name} is Bound and named by live CNClaims {', '.join(holders)}"
    else:
        message = f"pod {name} is Bound to CNClaim {holders[0]} but claimed-by={label or '-'}"
    named = [*holders, *([label] if label and label not in holders else [])]
    return _Offence(((POD, name), *((CLAIM, c) for c in named)), message)


def _claim_offence(world: World, name: str, claim: Obj) -> _Offence | None:
    """A live Bound claim whose pod is missing, not Bound, or labelled for someone else."""
    if world.live_claim(name) is None or claim_phase(claim) != "Bound":
        return None
    pod_name = spec_pod(claim)
    pod = world.pod(pod_name)
    if pod is None:
        what = f"pod {pod_name} does not exist" if pod_name else "it has no spec.podName"
    elif pod_phase(pod) != "Bound":
        what = f"pod {pod_name} is in phase {pod_phase(pod) or '-'}"
    elif claimed_by(pod) != name:
        what = f"pod {pod_name} is claimed-by={claimed_by(pod) or '-'}"
    else:
        return None
    objects = ((CLAIM, name), *([(POD, pod_name)] if pod_name else []))
    return _Offence(objects, f"CNClaim {name} is Bound but {what}")


INVARIANT = PodClaimAgreement()
