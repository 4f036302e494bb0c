"""Deleting a test namespace for good, even when the operator under test is gone.

A namespace holding CNClaims or CNClaimSets with the operator's finalizers stays
Terminating forever once the operator has stopped (and a stuck finalizer is
exactly what some scenarios provoke). The framework created the namespace, so
at teardown it deletes it and then strips those finalizers itself. A namespace
without mo-chaos's run-id label is never touched: it is not ours.
"""

from __future__ import annotations

from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.errors import UsageError
from mochaos.kube import GROUP, PLURALS, VERSION


def delete_namespace(api: client.ApiClient, namespace: str) -> None:
    """Delete ``namespace`` and release the finalizers of the operator's objects in it.

    UsageError, and nothing deleted, when the namespace lacks the run-id label.
    """
    core = client.CoreV1Api(api)
    try:
        labels = core.read_namespace(namespace, _request_timeout=10).metadata.labels or {}
        if RUN_ID_LABEL not in labels:
            raise UsageError(
                f"namespace {namespace} has no {RUN_ID_LABEL} label: mo-chaos did not create it",
                hint="mo-chaos deletes only its own namespaces; delete it yourself if unneeded",
            )
        core.delete_namespace(namespace, propagation_policy="Background", _request_timeout=10)
    except ApiException as err:
        if err.status != 404:
            raise
        return
    custom = client.CustomObjectsApi(api)
    for plural in PLURALS.values():
        try:
            items = custom.list_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, _request_timeout=10
            )["items"]
        except ApiException as err:
            if err.status == 404:
                continue
            raise
        for obj in items:
            if not obj["metadata"].get("finalizers"):
                continue
            try:
                custom.patch_namespaced_custom_object(
                    GROUP, VERSION, namespace, plural, obj["metadata"]["name"],
                    {"metadata": {"finalizers": None}}, _request_timeout=10,
                )  # fmt: skip
            except ApiException as err:
                if err.status != 404:
                    raise
