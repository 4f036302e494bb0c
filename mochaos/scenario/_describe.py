"""Short descriptions of recorded state, for failed waits and messages."""

from __future__ import annotations

from mochaos.ctrl.objects import CLAIMED_BY_LABEL, PHASE_LABEL, deleting, labels_of
from mochaos.observe.history import Change, Entry, State


def describe_state(state: State, *, limit: int = 12) -> str:
    """A one-line summary of claims and pods, for a wait that failed."""
    claims = [
        f"{n}={(c.get('status') or {}).get('phase') or '-'}"
        f"({(c.get('spec') or {}).get('podName') or '-'}{', deleting' if deleting(c) else ''})"
        for n, c in sorted(state.all("CNClaim").items())
    ]
    pods = [
        f"{n}={labels_of(p).get(PHASE_LABEL) or '-'}"
        f"{'/' + labels_of(p)[CLAIMED_BY_LABEL] if CLAIMED_BY_LABEL in labels_of(p) else ''}"
        for n, p in sorted(state.all("Pod").items())
    ]

    def head(items: list[str]) -> str:
        more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
        return ", ".join(items[:limit]) + more if items else "none"

    return f"claims: {head(claims)}; pods: {head(pods)}"


def rv_at(entry: Entry | None, state: State) -> int | None:
    """The resourceVersion an observation stands for: the change's own, else the newest."""
    if isinstance(entry, Change):
        return entry.rv
    rvs = [
        int((o.get("metadata") or {}).get("resourceVersion") or 0)
        for kind in state.objects.values()
        for o in kind.values()
    ]
    return max(rvs, default=None)
