"""The life cycle of a test namespace: created labelled, deleted for good, never silently.

A namespace is created with the run's id label and used once. Teardown deletes it
while the operator under test still runs, so the operator finalizes its own objects
(claims, pools, CNSets, LogSets, bucket claims, CN pods' drain hooks); it then waits
a bounded time. Whatever still holds a finalizer after that — a stuck finalizer is
exactly what some scenarios provoke, and a stopped operator finalizes nothing — is
released by mo-chaos and reported as a finding, never silently. A namespace without
the run-id label is never touched: it is not ours.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kubernetes import client
from kubernetes.client.rest import ApiException
from tenacity import (
    Retrying,
    retry_if_exception,
    retry_if_exception_type,
    stop_after_delay,
    wait_exponential,
)
from urllib3.exceptions import HTTPError

from mochaos.ctrl.objects import GROUP, RUN_ID_LABEL, VERSION
from mochaos.errors import InfraError, UsageError
from mochaos.kube import api_client
from mochaos.progress import LOGGER
from mochaos.tooling.waiting import wait_for

FINALIZED_KINDS: tuple[tuple[str, str, str], ...] = (
    # (group, version, plural) of every namespaced kind the operator or its dependencies
    # put finalizers on, in the order they are released (dependants before dependencies).
    (GROUP, VERSION, "cnclaims"),
    (GROUP, VERSION, "cnclaimsets"),
    (GROUP, VERSION, "cnpools"),
    (GROUP, VERSION, "cnsets"),
    (GROUP, VERSION, "proxysets"),
    (GROUP, VERSION, "webuis"),
    (GROUP, VERSION, "dnsets"),
    (GROUP, VERSION, "logsets"),
    (GROUP, VERSION, "matrixoneclusters"),
    (GROUP, VERSION, "bucketclaims"),
    (GROUP, VERSION, "backupjobs"),
    (GROUP, VERSION, "restorejobs"),
    ("apps.kruise.io", "v1alpha1", "clonesets"),
    ("apps.kruise.io", "v1beta1", "statefulsets"),
    ("", "v1", "pods"),
)
TEARDOWN_GRACE = 5.0
"""Seconds a test namespace may still take once its operator stopped, before mo-chaos
releases the finalizers left in it."""
SERVICE_ACCOUNT_TIMEOUT = 60.0
"""Seconds for kube-controller-manager to create a new namespace's default ServiceAccount:
after an apiserver outage it may have lost its lease, been restarted by the supervisor
and be waiting up to 15 s to lead again (20 s was seen to be too short under load)."""


T = TypeVar("T")

APISERVER_RETRY = {
    "retry": retry_if_exception_type((HTTPError, OSError))
    | retry_if_exception(lambda err: isinstance(err, ApiException) and (err.status or 0) >= 500),
    "wait": wait_exponential(multiplier=0.5, max=5),
    "stop": stop_after_delay(60),
    "reraise": True,
}
"""Teardown's calls outlast a slow or briefly unavailable apiserver (a loaded machine: reads
timing out after 10 s were seen): transient errors are retried for up to a minute."""


def _answered(call: Callable[[], T], what: str, *, policy: dict | None = None) -> T:
    """``call()``, retried by ``policy`` (:data:`APISERVER_RETRY`); InfraError when it never
    answers."""
    try:
        return Retrying(**(policy or APISERVER_RETRY))(call)
    except (HTTPError, OSError) as err:
        raise InfraError(
            f"the apiserver did not answer {what} within a minute: {type(err).__name__}",
            hint="the cluster is overloaded or down; check it and delete the namespace later",
        ) from err


@dataclass(frozen=True)
class Finding:
    """A finalizer mo-chaos had to remove itself at teardown."""

    kind: str
    name: str
    finalizers: tuple[str, ...]

    def __str__(self) -> str:
        fins = ", ".join(self.finalizers)
        return f"finalizer {fins} on {self.kind}/{self.name} had to be removed by mo-chaos"


def create(api: client.ApiClient, name: str, *, run_id: str) -> None:
    """Create the namespace labelled with the run id; wait until pods may be created in it."""
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name, "labels": {RUN_ID_LABEL: run_id}}})

    def default_account() -> tuple[bool, str]:
        accounts = [a.metadata.name for a in core.list_namespaced_service_account(name).items]
        return "default" in accounts, f"service accounts {accounts or 'none'}"

    wait_for(
        default_account, what=f"namespace {name}'s default ServiceAccount",
        timeout=SERVICE_ACCOUNT_TIMEOUT, interval=0.05,
        hint="kube-controller-manager is not working; check the cluster's logs",
    )  # fmt: skip


def request_delete(api: client.ApiClient, name: str) -> bool:
    """Ask for the namespace's deletion (only if it is ours); False when it is gone."""
    core = client.CoreV1Api(api)
    try:
        found = _answered(lambda: core.read_namespace(name, _request_timeout=10), f"on {name}")
        labels = found.metadata.labels or {}
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    if RUN_ID_LABEL not in labels:
        raise UsageError(
            f"namespace {name} has no {RUN_ID_LABEL} label: mo-chaos did not create it",
            hint="mo-chaos deletes only its own namespaces; delete it yourself if unneeded",
        )
    try:
        _answered(
            lambda: core.delete_namespace(
                name, propagation_policy="Background", _request_timeout=10
            ),
            f"deleting {name}",
        )
    except ApiException as err:
        if err.status != 404:
            raise
        return False
    return True


def wait_gone(api: client.ApiClient, name: str, *, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for the namespace to disappear; True when it did."""
    core = client.CoreV1Api(api)
    deadline = time.monotonic() + timeout
    while True:
        try:
            _answered(lambda: core.read_namespace(name, _request_timeout=10), f"on {name}")
        except ApiException as err:
            if err.status == 404:
                return True
            raise
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def release_finalizers(api: client.ApiClient, name: str) -> list[Finding]:
    """Remove every finalizer left in the namespace; return what had to be removed."""
    findings: list[Finding] = []
    for group, version, plural in FINALIZED_KINDS:
        for obj in _list(api, name, group, version, plural):
            meta = obj.get("metadata") or {}
            fins = tuple(meta.get("finalizers") or ())
            if not fins:
                continue
            if _strip(api, name, group, version, plural, meta["name"]):
                finding = Finding(obj.get("kind") or plural, meta["name"], fins)
                LOGGER.info("namespace %s: %s", name, finding)
                findings.append(finding)
    return findings


def delete(api: client.ApiClient, name: str, *, grace: float) -> list[Finding]:
    """Delete the namespace for good: ask, wait ``grace`` seconds, release what is left.

    Returns the findings (finalizers mo-chaos removed). UsageError, and nothing deleted,
    when the namespace lacks the run-id label.
    """
    if not request_delete(api, name):
        return []
    if wait_gone(api, name, timeout=grace):
        return []
    return release_finalizers(api, name)


def teardown(
    api: client.ApiClient, name: str, *, stop: Callable[[], None] | None = None, wait: float = 0.0
) -> list[Finding]:
    """The one teardown of a test namespace. When an operator runs in it (``stop`` stops
    it): ask for the deletion while it runs, so that it finalizes its own objects, and wait
    up to ``wait`` seconds; then stop it, whatever happened. Then delete the namespace for
    good (:func:`delete` with :data:`TEARDOWN_GRACE`) and return the findings."""
    try:
        if stop is not None and request_delete(api, name):
            wait_gone(api, name, timeout=wait)
    finally:
        if stop is not None:
            stop()
    return delete(api, name, grace=TEARDOWN_GRACE)


def reap(namespace: str, kubeconfig: Path, context: str | None) -> list[str]:
    """Delete a dead run's namespace for good, as its teardown would have (the callback of
    :func:`mochaos.runstate.reap`): the findings, as lines."""
    with api_client(kubeconfig, user_agent="mochaos/reaper", context=context) as api:
        return [str(f) for f in delete(api, namespace, grace=TEARDOWN_GRACE)]


def _list(
    api: client.ApiClient, namespace: str, group: str, version: str, plural: str
) -> Iterable[dict]:
    what = f"listing {plural} in {namespace}"
    try:
        if not group:
            core = client.CoreV1Api(api)
            pods = _answered(lambda: core.list_namespaced_pod(namespace, _request_timeout=10), what)
            return [api.sanitize_for_serialization(p) | {"kind": "Pod"} for p in pods.items]
        custom = client.CustomObjectsApi(api)
        listed = _answered(
            lambda: custom.list_namespaced_custom_object(
                group, version, namespace, plural, _request_timeout=10
            ),
            what,
        )
        return listed.get("items") or []
    except ApiException as err:
        if err.status == 404:  # the kind is not installed on this cluster
            return []
        raise


def _strip(
    api: client.ApiClient, namespace: str, group: str, version: str, plural: str, name: str
) -> bool:
    body = {"metadata": {"finalizers": None}}
    what = f"releasing the finalizers of {plural}/{name}"
    try:
        if not group:
            core = client.CoreV1Api(api)
            _answered(
                lambda: core.patch_namespaced_pod(name, namespace, body, _request_timeout=10), what
            )
        else:
            custom = client.CustomObjectsApi(api)
            _answered(
                lambda: custom.patch_namespaced_custom_object(
                    group, version, namespace, plural, name, body, _request_timeout=10
                ),
                what,
            )
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True
