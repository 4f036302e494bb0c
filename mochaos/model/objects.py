"""Helpers over plain-dict Kubernetes objects: metadata access, label selectors, merge patches.

Label selectors follow apimachinery: ``matchLabels`` and ``matchExpressions`` are ANDed, a
missing (None) selector matches nothing, an empty one matches everything.
"""

from __future__ import annotations

import copy
import random
from typing import Any

Obj = dict[str, Any]

# k8s.io/apimachinery/pkg/util/rand: lowercase consonants and digits without look-alikes.
_RAND_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def meta(obj: Obj) -> Obj:
    """The object's metadata (created empty when absent)."""
    return obj.setdefault("metadata", {})


def name_of(obj: Obj) -> str:
    """metadata.name."""
    return obj.get("metadata", {}).get("name", "")


def labels_of(obj: Obj) -> dict[str, str]:
    """metadata.labels, never None (read-only view when absent)."""
    return obj.get("metadata", {}).get("labels") or {}


def annotations_of(obj: Obj) -> dict[str, str]:
    """metadata.annotations, never None (read-only view when absent)."""
    return obj.get("metadata", {}).get("annotations") or {}


def mutable_labels(obj: Obj) -> dict[str, str]:
    """metadata.labels for writing (created when absent)."""
    m = meta(obj)
    if m.get("labels") is None:
        m["labels"] = {}
    return m["labels"]


def mutable_annotations(obj: Obj) -> dict[str, str]:
    """metadata.annotations for writing (created when absent)."""
    m = meta(obj)
    if m.get("annotations") is None:
        m["annotations"] = {}
    return m["annotations"]


def deleting(obj: Obj) -> bool:
    """True when metadata.deletionTimestamp is set."""
    return bool(obj.get("metadata", {}).get("deletionTimestamp"))


def rand_string(n: int) -> str:
    """A random string like apimachinery's ``rand.String(n)``."""
    return "".join(random.choice(_RAND_ALPHABET) for _ in range(n))


def selector_matches(selector: Obj | None, labels: dict[str, str]) -> bool:
    """Whether a metav1.LabelSelector matches a label set."""
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


def merge_diff(before: Obj, after: Obj) -> Obj:
    """The RFC 7386 merge patch that turns ``before`` into ``after`` (lists are atomic)."""
    patch: Obj = {}
    for key in before:
        if key not in after:
            patch[key] = None
    for key, value in after.items():
        old = before.get(key, _MISSING)
        if isinstance(value, dict) and isinstance(old, dict):
            sub = merge_diff(old, value)
            if sub:
                patch[key] = sub
        elif old is _MISSING or old != value:
            patch[key] = copy.deepcopy(value)
    return patch


_MISSING = object()
