"""Helpers over plain-dict Kubernetes objects: metadata access, label selectors, merge patches.

Label selectors follow apimachinery: ``matchLabels`` and ``matchExpressions`` are ANDed, a
missing (None) selector matches nothing, an empty one matches everything.
"""

from __future__ import annotations

import copy
import random

from mochaos.ctrl.objects import (
    Obj,
    annotations_of,
    deleting,
    labels_of,
    meta,
    name_of,
    selector_matches,
)

# The shared helpers come from mochaos.ctrl.objects (one implementation).
__all__ = [
    "Obj",
    "annotations_of",
    "deleting",
    "labels_of",
    "merge_diff",
    "meta",
    "mutable_annotations",
    "mutable_labels",
    "name_of",
    "rand_string",
    "selector_matches",
]


# k8s.io/apimachinery/pkg/util/rand: lowercase consonants and digits without look-alikes.
_RAND_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


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


def rand_string(n: int) -> str:
    """A random string like apimachinery's ``rand.String(n)``."""
    return "".join(random.choice(_RAND_ALPHABET) for _ in range(n))


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
