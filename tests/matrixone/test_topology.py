"""Each test namespace's MatrixOne: rendered objects, the pool spec, dry-runs, the Ready wait."""

from __future__ import annotations

import threading
import tomllib
from typing import Any

import pytest

from mochaos.ctrl.objects import API_VERSION, CLAIMSET_LABEL, POOL_NAME_LABEL, RUN_ID_LABEL
from mochaos.matrixone.storage import ACCESS_KEY, BUCKET, SECRET_KEY, SECRET_NAME, S3Store
from mochaos.matrixone.topology import (
    Topology,
    prepare_namespace,
    render_claimset,
    render_topology,
)
from mochaos.matrixone.waits import Timings
from mochaos.operator.target import PoolSpec
from mochaos.scenario._topology import cn_pool
from mochaos.tooling.apply import apply_objects
from mochaos.tooling.waiting import wait_for

STORE = S3Store("http://172.18.0.9:9000", BUCKET, ACCESS_KEY, SECRET_KEY, "docker")
FAST = Timings(image_pull=0, margin=0.5)


# -- the MatrixOne topology ---------------------------------------------------------------------


def _topology(namespace: str = "e2e-1", **kw: Any) -> dict[str, dict[str, Any]]:
    docs = render_topology(
        namespace=namespace, run_id="r1", mo_image="matrixorigin/matrixone:1.2.3",
        mo_version="1.2.3", store=STORE, **kw,
    )  # fmt: skip
    return {d["kind"]: d for d in docs}


def test_topology_objects_in_apply_order_all_namespaced_and_labelled() -> None:
    docs = render_topology(
        namespace="e2e-1", run_id="r1", mo_image="mo:1", mo_version="1.0.0", store=STORE
    )
    assert [d["kind"] for d in docs] == ["Secret", "LogSet", "DNSet", "CNPool"]
    for doc in docs:
        assert doc["metadata"]["namespace"] == "e2e-1"
        assert doc["metadata"]["labels"][RUN_ID_LABEL] == "r1"
    assert {d["apiVersion"] for d in docs[1:]} == {API_VERSION}


def test_logset_shape_follows_the_operators_e2e() -> None:
    # docs/operator-behaviour.md §12 (but one replica on a 2-core runner, not the e2e's
    # three): small volume, S3 type minio, a path under the
    # bucket, the MinIO endpoint and the Secret; the schema requires replicas, sharedStorage,
    # volume (the CRD is not available offline, so this is checked by shape).
    logset = _topology()["LogSet"]
    spec = logset["spec"]
    assert {"replicas", "sharedStorage", "volume"} <= set(spec)
    assert spec["replicas"] == 1
    assert spec["image"] == "matrixorigin/matrixone:1.2.3"
    assert spec["volume"] == {"size": "100Mi"}
    assert spec["sharedStorage"] == {
        "s3": {
            "type": "minio",
            "path": "matrixone/e2e-1",
            "endpoint": "http://172.18.0.9:9000",
            "secretRef": {"name": SECRET_NAME},
            "s3RetentionPolicy": "Retain",
        }
    }


def test_dnset_shape_depends_on_the_logset() -> None:
    objs = _topology()
    dnset = objs["DNSet"]
    assert dnset["spec"]["replicas"] == 1
    assert dnset["spec"]["cacheVolume"] == {"size": "100Mi"}
    # deps sit beside spec, naming the LogSet by metadata.
    logset = objs["LogSet"]["metadata"]
    assert dnset["deps"] == {
        "logSet": {"metadata": {"name": logset["name"], "namespace": logset["namespace"]}}
    }


def test_cnpool_shape_keeps_idle_pods_for_claims() -> None:
    objs = _topology(topology=Topology(max_idle=3, max_pods=5))
    pool = objs["CNPool"]
    spec = pool["spec"]
    assert {"template", "deps", "strategy"} <= set(spec)
    assert spec["template"]["image"] == "matrixorigin/matrixone:1.2.3"
    assert spec["template"]["operatorVersion"] == "1.3.0"
    assert spec["template"]["replicas"] == 0
    assert spec["strategy"] == {"updateStrategy": {}, "scaleStrategy": {"maxIdle": 3, "maxPods": 5}}
    # The CN reads the proxy's preamble, so the sessions mo-chaos holds are counted.
    assert tomllib.loads(spec["template"]["config"]) == {
        "cn": {"frontend": {"proxy-enabled": True}}
    }
    assert spec["deps"]["logSet"]["metadata"]["name"] == objs["LogSet"]["metadata"]["name"]
    assert spec["deps"]["dnSet"]["metadata"]["name"] == objs["DNSet"]["metadata"]["name"]
    # A claim selecting the pool-name label also matches the pool (scale-out on demand).
    assert spec["podLabels"][POOL_NAME_LABEL] == pool["metadata"]["name"]


def test_every_matrixone_object_names_its_semantic_version() -> None:
    # The webhook rejects a PodSet whose image tag is no semantic version unless it is set.
    objs = _topology()
    assert objs["LogSet"]["spec"]["semanticVersion"] == "1.2.3"
    assert objs["DNSet"]["spec"]["semanticVersion"] == "1.2.3"
    assert objs["CNPool"]["spec"]["template"]["semanticVersion"] == "1.2.3"
    nightly = render_topology(
        namespace="n", run_id="r", mo_image="matrixorigin/matrixone:nightly-4a4c2b8c",
        mo_version="2.1.0", store=STORE,
    )  # fmt: skip
    assert {d["spec"].get("semanticVersion") or d["spec"]["template"]["semanticVersion"]
            for d in nightly[1:]} == {"2.1.0"}  # fmt: skip


def test_the_logset_retains_its_bucket_so_the_namespace_can_terminate() -> None:
    # Delete (the webhook's default) makes the BucketClaim finalizer create a Job in the
    # terminating namespace; Retain releases the claim. PVCs keep the Delete policy.
    spec = _topology()["LogSet"]["spec"]
    assert spec["sharedStorage"]["s3"]["s3RetentionPolicy"] == "Retain"
    assert spec["pvcRetentionPolicy"] == "Delete"


def test_the_pool_spec_keeps_max_pods_and_overlays_the_scenarios_pool() -> None:
    rendered = _topology(topology=Topology(max_idle=2, max_pods=5))["CNPool"]
    spec = PoolSpec.of(rendered)
    assert spec.max_pods == 5
    pool = spec.overlay(cn_pool("p1", run_id="r9", max_idle=3))
    assert pool["spec"]["strategy"]["scaleStrategy"] == {"maxIdle": 3, "maxPods": 5}
    assert pool["spec"]["template"] == rendered["spec"]["template"]
    assert pool["spec"]["deps"] == rendered["spec"]["deps"]
    assert pool["spec"]["podLabels"] == {RUN_ID_LABEL: "r1", POOL_NAME_LABEL: "pool"}
    # The overlay copies: the scenario's pool does not share the spec's dicts.
    pool["spec"]["template"]["image"] = "changed"
    assert spec.template["image"] == "matrixorigin/matrixone:1.2.3"


def test_topology_secret_is_the_one_the_logset_names() -> None:
    objs = _topology()
    secret = objs["Secret"]
    assert (
        secret["metadata"]["name"]
        == objs["LogSet"]["spec"]["sharedStorage"]["s3"]["secretRef"]["name"]
    )
    assert set(secret["stringData"]) == {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}


def test_topology_sizes_fit_a_small_runner() -> None:
    objs = _topology()
    pods = objs["LogSet"]["spec"]["replicas"] + objs["DNSet"]["spec"]["replicas"]
    pods += objs["CNPool"]["spec"]["strategy"]["scaleStrategy"]["maxPods"]
    requests = [
        objs["LogSet"]["spec"]["resources"]["requests"],
        objs["DNSet"]["spec"]["resources"]["requests"],
        objs["CNPool"]["spec"]["template"]["resources"]["requests"],
    ]
    # Requests are the measured resident memory of each process (docs/matrixone-image.md).
    assert requests == [{"cpu": "100m", "memory": m} for m in ("256Mi", "512Mi", "256Mi")]
    # One log replica, one TN and at most six CNs: 0.8 core and 2.3 GiB requested.
    assert pods <= 8


def test_claimset_selects_its_own_claims_and_has_template_labels() -> None:
    cs = render_claimset(namespace="e2e-1", run_id="r1", name="cs-a", replicas=2)
    assert cs["kind"] == "CNClaimSet"
    assert cs["spec"]["replicas"] == 2
    assert cs["spec"]["selector"] == {"matchLabels": {CLAIMSET_LABEL: "cs-a"}}
    # The operator writes into template.metadata.labels, so it must exist
    # (docs/operator-behaviour.md §5.3).
    assert cs["spec"]["template"]["metadata"]["labels"] == {RUN_ID_LABEL: "r1"}
    assert cs["spec"]["template"]["spec"]["selector"] == {"matchLabels": {POOL_NAME_LABEL: "pool"}}


# -- server-side dry-run on the local cluster ----------------------------------------------------


def _ensure_crds(kube: Any) -> None:
    from mochaos.crds import own_crds

    apply_objects(kube, list(own_crds().docs))


def test_rendered_pool_and_claimset_pass_the_crd_schemas_local(kube, namespace) -> None:
    _ensure_crds(kube)
    rendered = _topology(namespace)["CNPool"]
    scenario_pool = PoolSpec.of(rendered).overlay(cn_pool("p2", run_id="r1", max_idle=2))
    scenario_pool["metadata"]["namespace"] = namespace
    claimset = render_claimset(namespace=namespace, run_id="r1", name="cs-a", replicas=2)
    applied = apply_objects(kube, [rendered, scenario_pool, claimset], dry_run=True)
    # Nothing was pruned by the structural schemas: the fields the operator reads survive.
    assert applied[0]["spec"]["strategy"]["scaleStrategy"] == {"maxIdle": 2, "maxPods": 6}
    assert applied[1]["spec"]["strategy"]["scaleStrategy"] == {"maxIdle": 2, "maxPods": 6}
    assert applied[0]["spec"]["podLabels"][POOL_NAME_LABEL] == "pool"
    assert applied[2]["spec"]["template"]["metadata"]["labels"] == {RUN_ID_LABEL: "r1"}
    assert applied[2]["spec"]["selector"] == {"matchLabels": {CLAIMSET_LABEL: "cs-a"}}
    assert applied[2]["metadata"]["namespace"] == namespace


def test_dry_run_rejects_a_claimset_the_schema_forbids_local(kube, namespace) -> None:
    from kubernetes.client.exceptions import ApiException

    _ensure_crds(kube)
    claimset = render_claimset(namespace=namespace, run_id="r1", name="cs-b", replicas=1)
    del claimset["spec"]["template"]
    with pytest.raises(ApiException) as info:
        apply_objects(kube, [claimset], dry_run=True)
    assert info.value.status == 422


def _test_only_crd(kind: str, plural: str) -> dict[str, Any]:
    """A schema-less CRD for LogSet / DNSet (the real ones are not available offline)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.core.matrixorigin.io",
            "labels": {"mochaos.io/schema": "test-only"},
        },
        "spec": {
            "group": "core.matrixorigin.io",
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


def test_prepare_namespace_applies_the_base_and_waits_for_ready_local(kube, namespace) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    _ensure_crds(kube)
    apply_objects(kube, [_test_only_crd("LogSet", "logsets"), _test_only_crd("DNSet", "dnsets")])
    custom = client.CustomObjectsApi(kube)
    wait_for(
        lambda: (custom.list_namespaced_custom_object("core.matrixorigin.io", "v1alpha1",
                                                      namespace, "logsets") is not None, "served"),
        what="test-only CRDs", timeout=30, interval=0.2,
    )  # fmt: skip
    ready_was_set = threading.Event()
    outcome: dict[str, Any] = {}

    def prepare() -> None:
        try:
            outcome["spec"] = prepare_namespace(
                kube, namespace=namespace, mo_image="matrixorigin/matrixone:1.2.3",
                mo_version="1.2.3", store=STORE, topology=Topology(), timings=FAST,
                progress=lambda line: None,
            )  # fmt: skip
            outcome["after_ready"] = ready_was_set.is_set()
        except Exception as err:  # surfaced by the assertions below
            outcome["error"] = err

    worker = threading.Thread(target=prepare)
    worker.start()

    def applied() -> tuple[bool, str]:
        try:
            for plural in ("logsets", "dnsets"):
                custom.get_namespaced_custom_object(
                    "core.matrixorigin.io", "v1alpha1", namespace, plural, "pool"
                )
        except ApiException:
            return False, "not yet"
        return True, "both applied"

    wait_for(applied, what="LogSet and DNSet", timeout=60, interval=0.1)
    assert worker.is_alive()  # still waiting: nothing is Ready yet
    ready_was_set.set()
    for plural in ("logsets", "dnsets"):
        custom.patch_namespaced_custom_object(
            "core.matrixorigin.io", "v1alpha1", namespace, plural, "pool",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        )  # fmt: skip
    worker.join(timeout=120)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["after_ready"] is True
    spec = PoolSpec.of(outcome["spec"])
    assert spec.template["image"] == "matrixorigin/matrixone:1.2.3"
    assert spec.max_pods == 6
    assert spec.deps["dnSet"]["metadata"] == {"name": "pool", "namespace": namespace}
    assert spec.pod_labels[POOL_NAME_LABEL] == "pool"
    core = client.CoreV1Api(kube)
    run_id = core.read_namespace(namespace).metadata.labels[RUN_ID_LABEL]
    secret = core.read_namespaced_secret(SECRET_NAME, namespace)
    assert secret.metadata.labels[RUN_ID_LABEL] == run_id
    assert (
        custom.list_namespaced_custom_object(
            "core.matrixorigin.io", "v1alpha1", namespace, "cnpools"
        )["items"]
        == []
    )  # the scenario creates its own pool
