"""Cluster-wide installation shared by operator targets: the claim CRDs, and who owns them.

Two installers can put the CNClaim / CNClaimSet / CNPool CRDs into a cluster:
mo-chaos (``apply_crds``, for ``model:`` and ``binary:`` targets, with its own
minimal schemas when the operator's module is not available) and the
operator's Helm chart, which ships them as templates and therefore owns them.
Neither may take the other's: :func:`crd_owner` says who installed a CRD,
:func:`apply_crds` refuses to overwrite the chart's (:func:`refuse_chart_crds`),
and :func:`check_chart_can_own_crds` refuses to run the chart over ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.errors import InfraError, UsageError
from mochaos.kube import api_client
from mochaos.operator.crd_source import CRD_FILES, DEFAULT_OPERATOR_VERSION, crds
from mochaos.tooling.apply import FIELD_MANAGER
from mochaos.tooling.waiting import wait_for
from mochaos.types import GROUP, Cluster

ESTABLISH_TIMEOUT = 30.0
HELM_MANAGED_BY = ("app.kubernetes.io/managed-by", "Helm")
HELM_RELEASE = "meta.helm.sh/release-name"
HELM_RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"
OWN_SCHEMA_LABEL = ("mochaos.io/schema", "own")
CLAIM_CRDS = tuple(f"{plural}.{GROUP}" for plural in CRD_FILES)
"""The three CRDs both installers deal in."""


def _meta(crd: Any) -> Mapping[str, Any]:
    if isinstance(crd, Mapping):
        return crd.get("metadata") or {}
    meta = crd.metadata
    return {
        "labels": meta.labels,
        "annotations": meta.annotations,
        "managedFields": [{"manager": f.manager} for f in meta.managed_fields or []],
    }


def crd_owner(crd: Any) -> str:
    """Who installed a CRD (a dict or a V1CustomResourceDefinition).

    ``helm:<release>/<namespace>`` when Helm's ownership label and annotations
    are on it; ``mochaos`` when it carries our own-schema label or mo-chaos
    applied it (field manager ``mochaos``); ``manager:<name>`` for the first
    other field manager; ``unknown`` otherwise.
    """
    meta = _meta(crd)
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    key, value = HELM_MANAGED_BY
    if labels.get(key) == value or HELM_RELEASE in annotations:
        release = annotations.get(HELM_RELEASE, "?")
        return f"helm:{release}/{annotations.get(HELM_RELEASE_NAMESPACE, '?')}"
    managers = [f.get("manager", "") for f in meta.get("managedFields") or []]
    if labels.get(OWN_SCHEMA_LABEL[0]) == OWN_SCHEMA_LABEL[1] or FIELD_MANAGER in managers:
        return "mochaos"
    return f"manager:{managers[0]}" if managers and managers[0] else "unknown"


def claim_crd_owners(ext: Any) -> dict[str, str]:
    """The owner (:func:`crd_owner`) of each claim CRD present, from an ApiextensionsV1Api."""
    owners = {}
    for name in CLAIM_CRDS:
        try:
            owners[name] = crd_owner(ext.read_custom_resource_definition(name))
        except ApiException as err:
            if err.status != 404:
                raise
    return owners


def refuse_chart_crds(owners: Mapping[str, str]) -> None:
    """UsageError when a claim CRD was installed by Helm: our schema must not replace it."""
    helm = sorted((n, o) for n, o in owners.items() if o.startswith("helm:"))
    if helm:
        name, owner = helm[0]
        raise UsageError(
            f"CRD {name} was installed by {owner} (the operator's chart); mo-chaos will not "
            "replace it with its own schema",
            hint="run model:/binary: targets on a cluster without the chart "
            "(e.g. --cluster=local), or use --operator=installed",
        )


def refuse_own_crds(owners: Mapping[str, str]) -> None:
    """UsageError when mo-chaos's own claim CRDs are present: Helm would refuse to adopt them.

    The chart ships the CRDs as templates; Helm does not take over objects it
    did not create ("invalid ownership metadata"), and ours are not the
    operator's schema anyway.
    """
    ours = sorted(n for n, o in owners.items() if o == "mochaos")
    if ours:
        raise UsageError(
            f"CRD {ours[0]} holds mo-chaos's own schema (a model: or binary: run installed it); "
            "the operator's chart must install its own",
            hint=f"delete them first (`kubectl delete crd {' '.join(ours)}`, which deletes "
            "their objects) or use a fresh cluster",
        )


def apply_crds(cluster: Cluster, *, version: str = DEFAULT_OPERATOR_VERSION) -> str:
    """Server-side apply the three CRDs and wait until they are Established; return source.

    UsageError, before any write, when a CRD was installed by Helm (the
    operator's chart): its real schema must not be replaced by ours.
    """
    source, docs = crds(version)
    with api_client(cluster.kubeconfig, user_agent="mochaos/install") as api:
        ext = client.ApiextensionsV1Api(api)
        refuse_chart_crds(claim_crd_owners(ext))
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


def check_chart_can_own_crds(api: Any) -> None:
    """:func:`refuse_own_crds` for the cluster behind ``api`` (before the chart is installed)."""
    refuse_own_crds(claim_crd_owners(client.ApiextensionsV1Api(api)))


def _established(ext: client.ApiextensionsV1Api, name: str) -> tuple[bool, str]:
    crd = ext.read_custom_resource_definition(name)
    for cond in (crd.status and crd.status.conditions) or []:
        if cond.type == "Established":
            return cond.status == "True", f"Established={cond.status}"
    return False, "no Established condition yet"


def _wait_established(ext: client.ApiextensionsV1Api, name: str) -> None:
    wait_for(
        lambda: _established(ext, name),
        what=f"CRD {name}",
        timeout=ESTABLISH_TIMEOUT,
        interval=0.1,
        hint="check the apiserver",
    )
