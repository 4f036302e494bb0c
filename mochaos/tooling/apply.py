"""Manifests: render a packaged ``${name}`` template, apply objects server-side.

Templates live in the package's ``manifests/`` folder (:data:`MANIFESTS`);
objects are applied with field manager ``mochaos``.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from mochaos.errors import UsageError

MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"
"""The packaged manifests/ folder (templates, kind audit policy)."""

FIELD_MANAGER = "mochaos"
"""The server-side apply field manager of everything mo-chaos applies."""


def render_manifest(path: Path, values: Mapping[str, object]) -> list[dict[str, Any]]:
    """The YAML documents of a ``${name}`` template with ``values`` filled in."""
    try:
        text = string.Template(path.read_text()).substitute({k: str(v) for k, v in values.items()})
    except KeyError as err:
        raise UsageError(
            f"manifest {path.name} needs a value for ${{{err.args[0]}}}",
            hint="pass it to the renderer",
        ) from err
    return [doc for doc in yaml.safe_load_all(text) if doc]


def apply_objects(
    api_client: Any, docs: Sequence[Mapping[str, Any]], *, dry_run: bool = False
) -> list[dict[str, Any]]:
    """Server-side apply each object (field manager ``mochaos``); the objects the API returned.

    With ``dry_run`` the apiserver validates and defaults every object (CRD
    schema, admission) but persists nothing.
    """
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    dyn = DynamicClient(api_client)
    applied = []
    for doc in docs:
        try:
            resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        except ResourceNotFoundError:
            # A CRD applied a moment ago is not in the discovery cache yet.
            dyn.resources.invalidate_cache()
            resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        out = resource.server_side_apply(
            body=dict(doc),
            namespace=doc["metadata"].get("namespace"),
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
            dry_run="All" if dry_run else None,
        )
        applied.append(out.to_dict())
    return applied
