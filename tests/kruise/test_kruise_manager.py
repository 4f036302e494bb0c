"""The real kruise-manager on the session's local cluster: its CRDs, its webhooks served for
real, CloneSets turned into kwok pods, and the behaviour the operator meets (defaulting, the
podsToDelete check, a pre-delete hook holding a pod not Ready, an in-place image update).

The fixture provides it as a real operator target does (built on first use, ~3 min cold);
it stays running on the cluster for the next run, like the cluster.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.cluster.environment import Environment
from mochaos.cluster.local import doubles_host
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.crds import KRUISE_OWNER, OWNER_LABEL
from mochaos.doubles import DoubleContext
from mochaos.kruise import manager, module
from mochaos.kube import Cluster

from support.polling import wait_until

wait = partial(wait_until, timeout=30.0)
GROUP, VERSION, PLURAL = "apps.kruise.io", "v1alpha1", "clonesets"
HOLD = "example.mochaos.io/hold"


@pytest.fixture(scope="module")
def kruise(cluster: Cluster) -> DoubleContext:
    """kruise-manager running on the local cluster; its context."""
    if cluster.provider != "local":
        pytest.skip("kruise-manager runs as a process of the local cluster")
    LocalProvider(name=cluster.name).provide(Environment(kruise=module.DEFAULT_VERSION))
    spec = manager.spec(module.DEFAULT_VERSION)
    assert cluster.state_dir is not None
    return doubles_host.context(spec, cluster_name=cluster.name, cluster_dir=cluster.state_dir)


@pytest.fixture
def custom(kube) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(kube)


@pytest.fixture
def core(kube) -> client.CoreV1Api:
    return client.CoreV1Api(kube)


@pytest.fixture
def released(core: client.CoreV1Api, namespace: str) -> Iterator[None]:
    """After the test, strip the finalizers it put on pods, so the namespace can go."""
    yield
    for pod in core.list_namespaced_pod(namespace).items:
        if pod.metadata.finalizers:
            with contextlib.suppress(ApiException):
                core.patch_namespaced_pod(
                    pod.metadata.name, pod.metadata.namespace, {"metadata": {"finalizers": None}}
                )


def cloneset(name: str, **spec: Any) -> dict[str, Any]:
    template = spec.pop("template", {})
    return {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "CloneSet", "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, **template.get("metadata", {})},
                "spec": {"containers": [{"name": "main", "image": template.get("image", "mo:1")}]},
            },
            **spec,
        },
    }  # fmt: skip


def get(custom: client.CustomObjectsApi, namespace: str, name: str) -> dict[str, Any]:
    return custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)


def pods(core: client.CoreV1Api, namespace: str, app: str) -> list[client.V1Pod]:
    return core.list_namespaced_pod(namespace, label_selector=f"app={app}").items


def ready(pod: client.V1Pod) -> str | None:
    return next((c.status for c in pod.status.conditions or [] if c.type == "Ready"), None)


def test_it_serves_with_all_its_crds_and_its_webhooks(kruise: DoubleContext, kube, cluster):
    ext = client.ApiextensionsV1Api(kube)
    installed = {
        c.metadata.name: c for c in ext.list_custom_resource_definition().items
        if c.spec.group.endswith("kruise.io")
    }  # fmt: skip
    assert len(installed) == 17
    assert {c.metadata.labels.get(OWNER_LABEL) for c in installed.values()} == {KRUISE_OWNER}
    port = manager.ports(kruise)["webhook"]
    adm = client.AdmissionregistrationV1Api(kube)
    hooks = adm.read_mutating_webhook_configuration("kruise-mutating-webhook-configuration")
    urls = {h.client_config.url for h in hooks.webhooks}
    assert f"https://127.0.0.1:{port}/mutate-pod" in urls
    assert all(h.client_config.ca_bundle for h in hooks.webhooks)
    status = LocalProvider(name=cluster.name).status().splitlines()
    line = next(ln for ln in status if "component kruise" in ln)
    assert "healthy (pid " in line, line


def test_the_real_webhook_defaults_a_cloneset(kruise, custom, namespace):
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, cloneset("dflt"))
    spec = get(custom, namespace, "dflt")["spec"]
    assert spec["replicas"] == 1
    strategy = spec["updateStrategy"]
    assert (strategy["type"], strategy["partition"], strategy["maxUnavailable"],
            strategy["maxSurge"]) == ("ReCreate", 0, "20%", 0)  # fmt: skip


def test_a_cloneset_makes_ready_pods_with_kruises_gate(kruise, custom, core, namespace):
    custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, cloneset("cs", replicas=2)
    )
    wait(lambda: get(custom, namespace, "cs").get("status", {}).get("readyReplicas") == 2,
         what="2 ready replicas")  # fmt: skip
    found = pods(core, namespace, "cs")
    assert len(found) == 2
    for pod in found:
        assert pod.metadata.name.startswith("cs-")
        gates = {g.condition_type for g in pod.spec.readiness_gates or []}
        assert "KruisePodReady" in gates, gates
        assert ready(pod) == "True"
    assert get(custom, namespace, "cs")["status"]["labelSelector"] == "app=cs"


def test_pods_to_delete_naming_a_missing_pod_is_refused(kruise, custom, namespace):
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, cloneset("ptd"))
    patch = {"spec": {"scaleStrategy": {"podsToDelete": ["ptd-nope"]}}}
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "ptd", patch)
    assert err.value.status == 422
    assert "find pod ptd-nope failed" in err.value.body


def test_a_pre_delete_hook_holds_the_pod_not_ready_until_released(
    kruise, custom, core, namespace, released
):
    body = cloneset(
        "hook", replicas=2,
        lifecycle={"preDelete": {"finalizersHandler": [HOLD], "markPodNotReady": True}},
        template={"metadata": {"finalizers": [HOLD]}},
    )  # fmt: skip
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    wait(lambda: get(custom, namespace, "hook").get("status", {}).get("readyReplicas") == 2,
         what="2 ready replicas")  # fmt: skip
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "hook", {"spec": {"replicas": 1}}
    )

    def held() -> client.V1Pod | None:
        for pod in pods(core, namespace, "hook"):
            if (pod.metadata.labels or {}).get("lifecycle.apps.kruise.io/state") == (
                "PreparingDelete"
            ) and ready(pod) == "False":
                return pod
        return None

    pod = wait(held, what="a PreparingDelete pod, not Ready (KruisePodReady False)")
    assert pod.metadata.deletion_timestamp is None, "held by the hook, not deleted"
    core.patch_namespaced_pod(pod.metadata.name, namespace, {"metadata": {"finalizers": None}})
    wait(lambda: len(pods(core, namespace, "hook")) == 1, what="the released pod deleted")


def test_an_in_place_image_update_completes(kruise, custom, core, namespace):
    body = cloneset("ipu", replicas=2, updateStrategy={"type": "InPlaceIfPossible"})
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    wait(lambda: get(custom, namespace, "ipu").get("status", {}).get("readyReplicas") == 2,
         what="2 ready replicas")  # fmt: skip
    names = {p.metadata.name for p in pods(core, namespace, "ipu")}
    image = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "mo:2"}]}}}}
    custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "ipu", image)

    def updated() -> bool:
        status = get(custom, namespace, "ipu").get("status", {})
        return status.get("updatedReadyReplicas") == 2 and status.get("observedGeneration") == 2

    wait(updated, what="both pods updated in place and Ready")
    after = pods(core, namespace, "ipu")
    assert {p.metadata.name for p in after} == names, "updated in place, not recreated"
    assert {p.status.container_statuses[0].image for p in after} == {"mo:2"}


def test_an_advanced_statefulset_with_volumes_runs(kruise, custom, core, namespace):
    """The LogSet's shape: ordinals, a claim per pod from a class-less template (kwok's
    provisioner binds it), every pod Ready."""
    body = {
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "metadata": {"name": "log"},
        "spec": {
            "replicas": 2, "serviceName": "log-headless", "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": {"app": "log"}},
            "template": {"metadata": {"labels": {"app": "log"}}, "spec": {"containers": [
                {"name": "main", "image": "mo:1",
                 "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
        },
    }  # fmt: skip
    custom.create_namespaced_custom_object("apps.kruise.io", "v1beta1", namespace,
                                           "statefulsets", body)  # fmt: skip

    def ready() -> bool:
        sts = custom.get_namespaced_custom_object(
            "apps.kruise.io", "v1beta1", namespace, "statefulsets", "log"
        )
        return sts.get("status", {}).get("readyReplicas") == 2

    wait(ready, what="2 ready log pods")
    assert sorted(p.metadata.name for p in pods(core, namespace, "log")) == ["log-0", "log-1"]
    claims = core.list_namespaced_persistent_volume_claim(namespace).items
    assert sorted((c.metadata.name, c.status.phase) for c in claims) == [
        ("data-log-0", "Bound"), ("data-log-1", "Bound"),
    ]  # fmt: skip
