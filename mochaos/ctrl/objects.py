"""Plain-dict object helpers of the reference model: metadata
accessors and metav1.LabelSelector matching."""

from __future__ import annotations

from typing import Any

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
