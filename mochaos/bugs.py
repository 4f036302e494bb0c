"""The bug catalogue: every bug ID the invariants and reports use, with its short name.

The full entries (what goes wrong, the operator source it comes from, which invariant
and suite catch it) are in docs/bugs.md; the anchors there are the IDs lower-cased.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Bug:
    """One known bug of the operator's claim protocol."""

    id: str
    name: str
    summary: str

    @property
    def doc(self) -> str:
        """Where the catalogue describes it."""
        return f"docs/bugs.md#{self.id.lower().lstrip('#')}"


BUGS: dict[str, Bug] = {
    b.id: b
    for b in (
        Bug("B1", "finalize-stuck",
            "Finalize skips a pod another claim references but still counts it: never done"),
        Bug("B2", "scalein-picks-migrating",
            "CNClaimSet scale-in does not spare a claim that is migrating"),
        Bug("B3", "lost-keeps-podname",
            "a claim whose pod is gone turns Lost but keeps spec.podName"),
        Bug("B4", "pod-delete-not-mapped",
            "a pod deletion reaches its claim only through the claimed-by label"),
        Bug("B5", "label-residue",
            "a skipped pod keeps claimed-by of a claim that is gone"),
        Bug("B6", "scalein-during-migration",
            "B2 as the operator's log shows it: scale-in while a migration drains"),
        Bug("pool-churn", "pool-kills-replacements",
            "the pool marks the CloneSet's replacement pods Terminating as they appear while "
            "an older pod drains: a replica count that is not level-triggered"),
        Bug("#581", "double-binding",
            "two live claims bind the same pod during a migration"),
    )
}  # fmt: skip


def describe_bugs(ids: list[str] | tuple[str, ...]) -> str:
    """``B1 finalize-stuck, B5 label-residue`` (unknown IDs as they are)."""
    return ", ".join(f"{i} {BUGS[i].name}" if i in BUGS else i for i in ids)
