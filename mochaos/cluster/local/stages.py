"""The kwok Stages of the local cluster: kwok's defaults, kwok's volume provisioner, kubelet
stand-ins.

kwok's own Stages come from its module, read at build time
(:mod:`mochaos.binaries.kwok_stages`); after them come the stand-ins in
``kubelet_stages.yaml``: what a kubelet does and kwok's defaults do not (Ready re-evaluated
from readiness gates both ways, container images in the status following the spec after an
in-place update). Each stand-in's comment names the kubelet code it stands in for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

KUBELET_STAGES = Path(__file__).with_name("kubelet_stages.yaml")


def kubelet_stages() -> list[dict[str, Any]]:
    """The kubelet stand-ins (``kubelet_stages.yaml``)."""
    return [d for d in yaml.safe_load_all(KUBELET_STAGES.read_text()) if d]


def documents(defaults: Path) -> list[dict[str, Any]]:
    """Every Stage of the local cluster: kwok's defaults and volume Stages (from
    ``defaults``, written by :func:`mochaos.binaries.kwok_stages.write_defaults`), then the
    kubelet stand-ins."""
    return [*(d for d in yaml.safe_load_all(defaults.read_text()) if d), *kubelet_stages()]
