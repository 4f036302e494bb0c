"""The kwok Stages of the local cluster: kwok's defaults plus kubelet stand-ins.

A Stage list given to kwokctl replaces its defaults, so the list is kwok's own defaults
(read from the kwok module at build time, :func:`write_defaults`) followed by the
stand-ins in ``kubelet_stages.yaml``: what a kubelet does and kwok's defaults do not (Ready
re-evaluated from readiness gates both ways, container images in the status following the
spec after an in-place update). Each stand-in's comment names the kubelet code it stands in
for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

RECIPE = "module-files-v1"
DEFAULTS_FILE = "default-stages.yaml"
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
KUBELET_STAGES = Path(__file__).with_name("kubelet_stages.yaml")


def write_defaults(kwok_module: Path, out: Path) -> None:
    """Copy kwok's default Stages from its module folder into one file ``out``."""
    docs = []
    for rel in DEFAULT_STAGES:
        doc = yaml.safe_load((kwok_module / rel).read_text())
        if not isinstance(doc, dict) or doc.get("kind") != "Stage":
            raise ValueError(f"{kwok_module / rel} is not a kwok Stage")
        docs.append(doc)
    out.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def kubelet_stages() -> list[dict[str, Any]]:
    """The kubelet stand-ins (``kubelet_stages.yaml``)."""
    return [d for d in yaml.safe_load_all(KUBELET_STAGES.read_text()) if d]


def documents(defaults: Path) -> list[dict[str, Any]]:
    """Every Stage of the local cluster: kwok's defaults (from ``defaults``, written by
    :func:`write_defaults`), then the kubelet stand-ins."""
    return [*(d for d in yaml.safe_load_all(defaults.read_text()) if d), *kubelet_stages()]
