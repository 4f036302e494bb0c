"""The kwok Stages of the local cluster: kwok's defaults, kwok's volume provisioner, kubelet
stand-ins.

A Stage list given to kwokctl replaces its defaults, so the list is kwok's own defaults
(read from the kwok module at build time, :func:`write_defaults`), then kwok's own volume
Stages (its ``kwok-volume`` provisioner: a PVC of that StorageClass, the cluster's default,
gets a PersistentVolume and both are Bound, as a CSI provisioner would do; the operator's
LogSets and DNSets claim volumes), then the stand-ins in ``kubelet_stages.yaml``: what a
kubelet does and kwok's defaults do not (Ready re-evaluated from readiness gates both ways,
container images in the status following the spec after an in-place update). Each
stand-in's comment names the kubelet code it stands in for.
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
KUBELET_STAGES = Path(__file__).with_name("kubelet_stages.yaml")


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


def kubelet_stages() -> list[dict[str, Any]]:
    """The kubelet stand-ins (``kubelet_stages.yaml``)."""
    return [d for d in yaml.safe_load_all(KUBELET_STAGES.read_text()) if d]


def documents(defaults: Path) -> list[dict[str, Any]]:
    """Every Stage of the local cluster: kwok's defaults and volume Stages (from
    ``defaults``, written by :func:`write_defaults`), then the kubelet stand-ins."""
    return [*(d for d in yaml.safe_load_all(defaults.read_text()) if d), *kubelet_stages()]
