"""How kruise names what it creates: pods, instance ids, PVCs and template revisions.

- CloneSet pod ``<set>-<id>`` with a 5-character id from apimachinery's ``rand.String``
  alphabet (cloneset/sync/cloneset_scale.go:357-368, cloneset/core/cloneset_core.go:95);
- StatefulSet pod ``<set>-<ordinal>`` (statefulset/stateful_set_utils.go:80-83);
- PVC ``<template>-<set>-<id|ordinal>`` (cloneset_utils.go:201-203,
  stateful_set_utils.go:86-89);
- revision ``<set>-<hash>``: kruise hashes the ControllerRevision holding the pod template
  (fnv32a, then ``rand.SafeEncodeString``); we hash the template's canonical JSON the same
  way, so the form matches and equal templates give equal names, but the value differs.
"""

from __future__ import annotations

import json
import random
import re

from mochaos.doubles.kruise import keys
from mochaos.doubles.kruise.api import Obj

# k8s.io/apimachinery/pkg/util/rand: consonants and digits without look-alikes.
ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"

_ORDINAL = re.compile(r"(.*)-([0-9]+)$")


def random_id(rng: random.Random | None = None) -> str:
    """``rand.String(5)``: a CloneSet instance id."""
    pick = (rng or random).choice
    return "".join(pick(ALPHANUMS) for _ in range(keys.INSTANCE_ID_LENGTH))


def new_instance_id(taken: set[str], rng: random.Random | None = None) -> str:
    """A random instance id not in ``taken`` (getOrGenInstanceID's generating branch)."""
    while True:
        candidate = random_id(rng)
        if candidate not in taken:
            return candidate


def cloneset_pod_name(set_name: str, instance_id: str) -> str:
    """The CloneSet pod of an instance id."""
    return f"{set_name}-{instance_id}"


def statefulset_pod_name(set_name: str, ordinal: int) -> str:
    """The StatefulSet pod of an ordinal."""
    return f"{set_name}-{ordinal}"


def parent_and_ordinal(pod_name: str) -> tuple[str, int]:
    """getParentNameAndOrdinal: ("", -1) when the name does not end in ``-<digits>``."""
    match = _ORDINAL.fullmatch(pod_name)
    if match is None:
        return "", -1
    return match.group(1), int(match.group(2))


def pvc_name(template_name: str, set_name: str, suffix: str | int) -> str:
    """The PVC a workload creates from one of its volumeClaimTemplates for one pod."""
    return f"{template_name}-{set_name}-{suffix}"


def _fnv32a(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: map each byte into the look-alike-free alphabet."""
    return "".join(ALPHANUMS[ord(c) % len(ALPHANUMS)] for c in text)


def template_hash(template: Obj, collision_count: int = 0) -> str:
    """A short hash of a pod template (equal templates, equal hashes)."""
    canonical = json.dumps(template, sort_keys=True, separators=(",", ":")).encode()
    if collision_count:
        canonical += str(collision_count).encode()
    return safe_encode(str(_fnv32a(canonical)))


def revision_name(set_name: str, template: Obj) -> str:
    """The ControllerRevision name kruise would give the template: ``<set>-<hash>``."""
    return f"{set_name}-{template_hash(template)}"


def short_hash(revision: str) -> str:
    """GetShortHash: the part after the last dash (the ``pod-template-hash`` value)."""
    return revision.rsplit("-", 1)[-1]
