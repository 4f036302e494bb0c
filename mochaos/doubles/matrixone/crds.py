"""Our own minimal LogSet / DNSet / CNSet CRDs, for clusters without the operator's.

The MatrixOne double watches LogSets (one MatrixOne cluster per namespace that has one)
and reads a CN pod's CNSet (its ``scalingConfig.storeDrainEnabled``); its tests create
such objects on the local cluster. The schemas (``schemas/``, labelled
``mochaos.io/crds: own``) type nothing but keep every field; they are installed only
where no CRD of that name exists, so the operator's own CRDs always win.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.crds import wait_established

SCHEMAS = Path(__file__).with_name("schemas")
PLURALS = ("logsets", "dnsets", "cnsets")


def own_crds() -> list[dict[str, Any]]:
    """The three CRD documents."""
    return [yaml.safe_load((SCHEMAS / f"{p}.yaml").read_text()) for p in PLURALS]


def ensure(api: client.ApiClient, *, timeout: float = 30.0) -> list[str]:
    """Create the CRDs that do not exist yet and wait until they are served.

    Returns the names created (empty when all existed already).
    """
    ext = client.ApiextensionsV1Api(api)
    created = []
    for doc in own_crds():
        name = doc["metadata"]["name"]
        try:
            ext.read_custom_resource_definition(name)
            continue
        except ApiException as err:
            if err.status != 404:
                raise
        try:
            ext.create_custom_resource_definition(doc)
            created.append(name)
        except ApiException as err:
            if err.status != 409:
                raise
    wait_established(ext, created, timeout=timeout)
    return created
