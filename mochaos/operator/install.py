"""Cluster-wide installation shared by operator targets: the claim CRDs."""

from __future__ import annotations

import time

from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.errors import InfraError
from mochaos.kube import api_client
from mochaos.operator.crd_source import DEFAULT_OPERATOR_VERSION, crds
from mochaos.types import Cluster

FIELD_MANAGER = "mochaos"


def apply_crds(cluster: Cluster, *, version: str = DEFAULT_OPERATOR_VERSION) -> str:
    """Server-side apply the three CRDs and wait until they are Established; return source."""
    source, docs = crds(version)
    with api_client(cluster.kubeconfig, user_agent="mochaos/install") as api:
        ext = client.ApiextensionsV1Api(api)
        for doc in docs:
            try:
                ext.patch_custom_resource_definition(
                    name=doc["metadata"]["name"],
                    body=doc,
                    field_manager=FIELD_MANAGER,
                    force=True,
                    _content_type="application/apply-patch+yaml",
                )
            except ApiException as err:
                raise InfraError(
                    f"could not install CRD {doc['metadata']['name']}: {err.status} {err.reason}",
                    hint="check the cluster is reachable and you may create CRDs",
                ) from err
        for doc in docs:
            _wait_established(ext, doc["metadata"]["name"])
    return source


def _wait_established(ext: client.ApiextensionsV1Api, name: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        crd = ext.read_custom_resource_definition(name)
        for cond in (crd.status and crd.status.conditions) or []:
            if cond.type == "Established" and cond.status == "True":
                return
        time.sleep(0.1)
    raise InfraError(f"CRD {name} not Established after {timeout:.0f}s", hint="check the apiserver")
