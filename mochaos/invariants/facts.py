"""What the invariants read from objects, and what every judge shares.

Field access for claims, pods and claim sets (docs/operator-behaviour.md §2, §13),
``World``: the replayed objects with the indexes several invariants need (pods
by label, claims by pod, claims by claim set), and ``Facts``: the world plus
what is known so far of our own writes, shared by every judge of one history.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mochaos.ctrl.objects import (
    CLAIMED_BY_LABEL,
    CLAIMSET_LABEL,
    PHASE_LABEL,
    deleting,
    labels_of,
)
from mochaos.observe.history import ActionRecord, Change, Entry, State

CLAIM = "CNClaim"
CLAIMSET = "CNClaimSet"
POD = "Pod"

Obj = dict[str, Any]


def ref(kind: str, name: str) -> str:
    """How a Violation names an object: ``Kind/name``."""
    return f"{kind}/{name}"


def _spec(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def _status(obj: Obj) -> Obj:
    return obj.get("status") or {}


def spec_pod(claim: Obj) -> str:
    """The claim's ``spec.podName`` (the bound pod, or the migration target); '' if unset."""
    return _spec(claim).get("podName") or ""


def source_pod(claim: Obj) -> str:
    """The claim's ``spec.sourcePod.podName`` (set while migrating); '' if unset."""
    return (_spec(claim).get("sourcePod") or {}).get("podName") or ""


def claim_refs(claim: Obj) -> frozenset[str]:
    """The pods a claim references: its spec.podName and its migration source."""
    return frozenset(p for p in (spec_pod(claim), source_pod(claim)) if p)


def binding(claim: Obj) -> bool:
    """The claim is binding: Pending (or no phase written yet) and naming no pod. Its bind
    labels a pod ``Bound`` + ``claimed-by`` before it can name it (it must first reach
    HAKeeper), and adopts such a pod as its orphan on its next pass
    (cnclaim/controller.go:69-145 at 2301e3b)."""
    return not spec_pod(claim) and (_status(claim).get("phase") or "") in ("", "Pending")


def store_pod(claim: Obj) -> str:
    """The pod of the claim's store, ``status.store.string`` (quirk Q5); '' if unset."""
    return (_status(claim).get("store") or {}).get("string") or ""


def claim_set(claim: Obj) -> str:
    """The claim set a claim belongs to: its claimset label, else its controller owner."""
    label = labels_of(claim).get(CLAIMSET_LABEL)
    if label:
        return label
    for owner in (claim.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller") and owner.get("kind") == CLAIMSET:
            return owner.get("name") or ""
    return ""


def finalizers(obj: Obj) -> list[str]:
    """The object's ``metadata.finalizers``."""
    return list((obj.get("metadata") or {}).get("finalizers") or [])


def claimed_by(pod: Obj) -> str:
    """The pod's ``claimed-by`` label; '' if absent."""
    return labels_of(pod).get(CLAIMED_BY_LABEL) or ""


def pod_phase(pod: Obj) -> str:
    """The pod's pool phase label (Unknown|Idle|Bound|Draining|Terminating); '' if absent."""
    return labels_of(pod).get(PHASE_LABEL) or ""


def is_live(obj: Obj | None) -> bool:
    """True when the object exists and has no deletionTimestamp."""
    return obj is not None and not deleting(obj)


class World:
    """Objects replayed change by change, with pods by label, claims by pod and by claim set."""

    def __init__(self) -> None:
        self.state = State()
        self._pods_by_label: dict[str, set[str]] = {}
        self._claims_by_pod: dict[str, set[str]] = {}
        self._claims_by_set: dict[str, set[str]] = {}

    def apply(self, change: Change) -> Obj | None:
        """Fold one change in; return the object as it was before (None if it did not exist)."""
        before = self.state.get(change.kind, change.name)
        after = None if change.event == "DELETED" else change.obj
        if change.kind == POD:
            old, new = _get(claimed_by, before), _get(claimed_by, after)
            _move(self._pods_by_label, change.name, old, new)
        elif change.kind == CLAIM:
            old, new = _get(spec_pod, before), _get(spec_pod, after)
            _move(self._claims_by_pod, change.name, old, new)
            old, new = _get(claim_set, before), _get(claim_set, after)
            _move(self._claims_by_set, change.name, old, new)
        self.state.apply(change)
        return before

    def claim(self, name: str) -> Obj | None:
        """The claim, or None when it does not exist."""
        return self.state.get(CLAIM, name)

    def pod(self, name: str) -> Obj | None:
        """The pod, or None when it does not exist."""
        return self.state.get(POD, name)

    def live_claim(self, name: str) -> Obj | None:
        """The claim when it is live (exists, no deletionTimestamp), else None."""
        claim = self.claim(name)
        return claim if is_live(claim) else None

    def pods_labelled(self, claim: str) -> list[str]:
        """Existing pods labelled ``claimed-by=<claim>``, sorted."""
        return sorted(self._pods_by_label.get(claim, ()))

    def claims_naming(self, pod: str) -> list[str]:
        """Existing claims whose ``spec.podName`` is ``pod``, sorted."""
        return sorted(self._claims_by_pod.get(pod, ()))

    def claims_in_set(self, group: str) -> set[str]:
        """Existing claims of claim set ``group`` (a read-only view)."""
        return self._claims_by_set.get(group, set())

    def holders(self, pod: str, *, besides: str) -> list[str]:
        """Live claims other than ``besides`` that hold ``pod`` by spec.podName or by its label."""
        names = set(self.claims_naming(pod))
        obj = self.pod(pod)
        if obj is not None and claimed_by(obj):
            names.add(claimed_by(obj))
        names.discard(besides)
        return sorted(n for n in names if self.live_claim(n) is not None)


class Facts:
    """The world and what is known so far of our own writes, shared by the judges of a history.

    An action record may arrive after the change its write caused (it is written
    when the write returns, or completed then), so whether a change is ours can
    become known later: judges that care revise themselves when it does.
    """

    def __init__(self) -> None:
        self.world = World()
        self.own_rvs: set[int] = set()
        self.end = 0.0
        self.last_seq = -1

    def learn(self, action: ActionRecord) -> None:
        """Note the resourceVersion of one of our writes."""
        if action.write_rv is not None:
            self.own_rvs.add(action.write_rv)

    def advance(self, entry: Entry) -> None:
        """Move the history's end to ``entry`` (the last entry seen, in ``seq`` order)."""
        self.end = entry.t
        self.last_seq = entry.seq


def _get(read: Callable[[Obj], str], obj: Obj | None) -> str:
    return read(obj) if obj is not None else ""


def _move(index: dict[str, set[str]], member: str, old: str, new: str) -> None:
    if old == new:
        return
    if old:
        index[old].discard(member)
        if not index[old]:
            del index[old]
    if new:
        index.setdefault(new, set()).add(member)
