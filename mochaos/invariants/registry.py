"""The ten invariants of docs/invariants.md in the design's order, and lookup by ID."""

from __future__ import annotations

from mochaos.invariants import (
    bound_has_pod,
    finalizer_completes,
    migration_completes,
    no_label_residue,
    no_leaked_pods,
    pod_claim_agreement,
    replicas_converge,
    retry_budget,
    scalein_skips_migrating,
    single_binding,
)
from mochaos.invariants.base import InvariantBase

ALL: tuple[InvariantBase, ...] = (
    finalizer_completes.INVARIANT,
    no_label_residue.INVARIANT,
    single_binding.INVARIANT,
    bound_has_pod.INVARIANT,
    scalein_skips_migrating.INVARIANT,
    migration_completes.INVARIANT,
    replicas_converge.INVARIANT,
    retry_budget.INVARIANT,
    pod_claim_agreement.INVARIANT,
    no_leaked_pods.INVARIANT,
)

_BY_ID = {invariant.id: invariant for invariant in ALL}


def get(invariant_id: str) -> InvariantBase:
    """The invariant with this ID; KeyError naming the known IDs otherwise."""
    try:
        return _BY_ID[invariant_id]
    except KeyError:
        raise KeyError(f"unknown invariant {invariant_id!r}; known: {', '.join(_BY_ID)}") from None
