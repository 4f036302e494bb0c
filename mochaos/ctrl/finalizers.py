"""Every finalizer the operator under test sets: on which kind, who removes it, and by when.

The catalogue is read from the operator's source (matrixone-operator 2301e3b; paths are
relative to its ``pkg/controllers``); docs/invariants.md (every-finalizer-completes) shows it as a
table. The runtime of every reconciler adds ``matrixorigin.io/<controller name>`` with a
full Update on the object's first pass (``rt/reconciler.go:412-435``) and removes it only
once the controller's Finalize says done (``:366-376``). OpenKruise removes none of them.

``within`` is how long (operator seconds) a finalizer may hold an object once its removal
is due; the invariant adds its grace. What makes the removal due is the object's
deletionTimestamp, except for ``cn-draining``: it is the CloneSet's pre-delete lifecycle
hook, so its clock starts when OpenKruise moves the pod to ``PreparingDelete`` and holds it
there (``cnset/controller.go:318-334``; kruise ``pkg/controller/cloneset/sync/
cloneset_scale.go:270-281``).
"""

from __future__ import annotations

from dataclasses import dataclass

from mochaos.ctrl.objects import CLAIM_FINALIZER, CLAIMSET_FINALIZER

PREFIX = "matrixorigin.io/"
"""Every finalizer of the operator's starts so; a foreign one is not the operator's to remove."""
STORE_DRAIN_TIMEOUT = 300.0
"""The CNSet's ``scalingConfig.storeDrainTimeout`` default (``cnset_types.go``): a draining
store is given up on after this long (``cnstore/pooling.go:54-58``, ``controller.go:178-181``)."""
CNSTORE_FINALIZER = "matrixorigin.io/cnstore"
DRAINING_FINALIZER = "matrixorigin.io/cn-draining"
POOL_FINALIZER = "matrixorigin.io/cn-pool-manager"
PREPARING_DELETE = "PreparingDelete"
"""OpenKruise's lifecycle state of a pod held by a pre-delete hook."""
PREPARING_UPDATE = "PreparingUpdate"
"""OpenKruise's lifecycle state of a pod held by an in-place-update hook."""


@dataclass(frozen=True, slots=True)
class Finalizer:
    """One of the operator's finalizers: its name, the kinds it is on, who removes it and
    when, and how long (operator seconds) it may hold an object once its removal is due."""

    name: str
    kinds: tuple[str, ...]
    removed_by: str
    within: float
    due_at_preparing_delete: bool = False


DEFAULT_WITHIN = 60.0
"""A finalizer of the operator's not in the catalogue (a newer build's) gets this long."""

CATALOGUE: tuple[Finalizer, ...] = (
    Finalizer(CLAIM_FINALIZER, ("CNClaim",),
              "the claim's Finalize, once no pod is Bound with claimed-by=<claim> "
              "(cnclaim/controller.go:343-351); judged by finalizer-completes", 60.0),
    Finalizer(CLAIMSET_FINALIZER, ("CNClaimSet",),
              "the claim set's Finalize, once none of its claims is left "
              "(cnclaimset/controller.go:253-270): after its claims' own finalizers", 120.0),
    Finalizer(POOL_FINALIZER, ("CNPool",),
              "the pool's Finalize, once no CNSet of the pool is listed "
              "(cnpool/controller.go:397-414): after the CN pods drained",
              STORE_DRAIN_TIMEOUT + 60),
    Finalizer(CNSTORE_FINALIZER, ("Pod",),
              "the store controller's OnDeleted, after DeleteCNStore in HAKeeper "
              "(cnstore/controller.go:88-120); kept while HAKeeper cannot be reached", 60.0),
    Finalizer(DRAINING_FINALIZER, ("Pod",),
              "the store controller's completeDraining, when the drain is done or timed out "
              "(cnstore/controller.go:178-181, 297-306), or OnDeleted (:113-118)",
              STORE_DRAIN_TIMEOUT + 30, due_at_preparing_delete=True),
)  # fmt: skip
"""The operator's finalizers on the kinds mo-chaos records (CNSet, LogSet, DNSet and
BucketClaim finalizers exist too; the recorder does not watch those kinds)."""

_BY_NAME = {f.name: f for f in CATALOGUE}


def lookup(name: str) -> Finalizer | None:
    """The catalogue's entry for ``name``; an unknown finalizer of the operator's gets
    :data:`DEFAULT_WITHIN`; a foreign one (not ``matrixorigin.io/``) None."""
    found = _BY_NAME.get(name)
    if found is not None:
        return found
    if name.startswith(PREFIX):
        return Finalizer(name, (), "its controller's Finalize (not in the catalogue)",
                         DEFAULT_WITHIN)  # fmt: skip
    return None
