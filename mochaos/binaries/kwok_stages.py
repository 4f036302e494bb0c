"""kwok's own Stages, read from its module at build time into the ``kwok-stages`` component.

A Stage list given to kwokctl replaces its defaults, so the local cluster's list starts with
kwok's own defaults and kwok's volume Stages (its ``kwok-volume`` provisioner: a PVC of that
StorageClass, the cluster's default, gets a PersistentVolume and both are Bound, as a CSI
provisioner would do; the operator's LogSets and DNSets claim volumes). This module copies
them from the module folder (:func:`write_defaults`); the local cluster adds its kubelet
stand-ins (:mod:`mochaos.cluster.local.stages`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

RECIPE = "module-files-v2"
DEFAULTS_FILE = "default-stages.yaml"
STORAGE_CLASS_FILE = "storage-class.yaml"
DEFAULT_STAGES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)
"""The files kwokctl embeds as its defaults for the binary runtime (kwok v0.8.0
``pkg/kwokctl/runtime/cluster.go``: ``getDefaultNodeStages`` with a node lease, whose
heartbeat delay the default 10 s status frequency leaves as it is, and
``getDefaultPodStages``), in its order."""
VOLUME_STAGES = tuple(
    f"kustomize/stage/volume/fast/{name}.yaml"
    for name in ("pvc-provision", "pv-bind", "pvc-delete", "pv-delete")
)
"""kwok's volume provisioner (``kustomize/stage/volume/fast``), for PVCs of its StorageClass."""
STORAGE_CLASS = "kustomize/stage/volume/fast/storage-class.yaml"
"""kwok's ``kwok-volume`` StorageClass, marked as the default class."""


def write_defaults(kwok_module: Path, out: Path) -> None:
    """Copy kwok's default and volume Stages from its module folder into one file ``out``,
    and its StorageClass into :data:`STORAGE_CLASS_FILE` next to it."""
    docs = [_read(kwok_module / rel, "Stage") for rel in (*DEFAULT_STAGES, *VOLUME_STAGES)]
    out.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    storage = _read(kwok_module / STORAGE_CLASS, "StorageClass")
    (out.parent / STORAGE_CLASS_FILE).write_text(yaml.safe_dump(storage, sort_keys=False))


def _read(path: Path, kind: str) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    if not isinstance(doc, dict) or doc.get("kind") != kind:
        raise ValueError(f"{path} is not a kwok {kind}")
    return doc


def storage_class(defaults: Path) -> dict[str, Any]:
    """kwok's StorageClass, written by :func:`write_defaults` next to ``defaults``."""
    doc: dict[str, Any] = yaml.safe_load((defaults.parent / STORAGE_CLASS_FILE).read_text())
    return doc
