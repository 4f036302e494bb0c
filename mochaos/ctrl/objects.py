"""The objects' names and plain-dict helpers, shared by the model, the invariants and the
framework: the operator's API group, labels, annotations and finalizers
(docs/operator-behaviour.md §2, §13), mo-chaos's own run label, metadata accessors and
metav1.LabelSelector matching."""

from __future__ import annotations

from typing import Any

GROUP = "core.matrixorigin.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

PHASE_LABEL = "pool.matrixorigin.io/phase"
CLAIMED_BY_LABEL = "pool.matrixorigin.io/claimed-by"
POOL_NAME_LABEL = "pool.matrixorigin.io/pool-name"
CLAIMSET_LABEL = "matrixorigin.io/claimset"
OWNER_LABEL = "matrixorigin.io/owner"
LAST_OWNER_LABEL = "matrixorigin.io/last-owner"
INSTANCE_ID_LABEL = "claim.matrixorigin.io/instance-id"
KRUISE_STATE_LABEL = "lifecycle.apps.kruise.io/state"
SCORE_ANNOTATION = "matrixorigin.io/score"
RECLAIMED_AT_ANNOTATION = "matrixorigin.io/reclaimed-at"
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
CLAIM_FINALIZER = "matrixorigin.io/cn-claim-manager"
CLAIMSET_FINALIZER = "matrixorigin.io/cn-claimset-manager"
COMPONENT_LABEL = "matrixorigin.io/component"
INSTANCE_LABEL = "matrixorigin.io/instance"
NAMESPACE_LABEL = "matrixorigin.io/namespace"
OUTDATED_LABEL = "matrixorigin.io/outdated"
DIRECT_POD_LABEL = "pool.matrixorigin.io/direct-pod"
MANAGEMENT_POLICY_ANNOTATION = "pool.matrixorigin.io/management-policy"
DELETE_ON_RECLAIM_ANNOTATION = "matrixorigin.io/delete-on-reclaim"
CONNECTIONS_ANNOTATION = "matrixorigin.io/connections"
DIAGNOSE_ANNOTATION = "matrixorigin.io/diagnos-draining"
"""Spelled so in the operator (``diagnos``)."""
DRAINING_START_ANNOTATION = "matrixorigin.io/store-draining-start"
"""When the store controller began draining a pod held in PreparingDelete (RFC 3339)."""
CORDON_ANNOTATION = "matrixorigin.io/store-cordon"

RUN_ID_LABEL = "mochaos.io/run-id"
"""Every object mo-chaos creates carries this label (docs/operator-behaviour.md §11.10)."""
SESSIONS_ANNOTATION = "mochaos.io/sessions"
"""Written on a CN pod when mo-chaos changes its sessions, so the operator's store
controller re-reads them now rather than on its next 30 s resync (docs/model-pacing.md)."""

Obj = dict[str, Any]


def meta(obj: Obj) -> Obj:
    """metadata (created empty when absent)."""
    return obj.setdefault("metadata", {})


def name_of(obj: Obj) -> str:
    """metadata.name."""
    return (obj.get("metadata") or {}).get("name", "")


def labels_of(obj: Obj) -> dict[str, str]:
    """metadata.labels, never None (read-only view when absent)."""
    return (obj.get("metadata") or {}).get("labels") or {}


def annotations_of(obj: Obj) -> dict[str, str]:
    """metadata.annotations, never None (read-only view when absent)."""
    return (obj.get("metadata") or {}).get("annotations") or {}


def deleting(obj: Obj) -> bool:
    """True when metadata.deletionTimestamp is set."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def claim_phase(claim: Obj) -> str:
    """The claim's ``status.phase`` (Pending|Bound|Lost|Outdated); '' if unset."""
    return (claim.get("status") or {}).get("phase") or ""


def selector_matches(selector: Obj | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics: None matches nothing, {} matches everything, the
    matchLabels and matchExpressions are ANDed."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True
