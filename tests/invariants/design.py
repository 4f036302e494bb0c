"""The design's ten invariants, in report order.

Tests that pin what the design's ten do (their notes, their order, the synthetic histories
that break each) name them from here, so that an invariant added later (rank 1000 by default,
sorted after them) changes no test of the framework.
"""

DESIGN = (
    "finalizer-completes",
    "no-label-residue",
    "single-binding",
    "bound-has-pod",
    "scalein-skips-migrating",
    "migration-completes",
    "replicas-converge",
    "retry-budget",
    "pod-claim-agreement",
    "no-leaked-pods",
)
