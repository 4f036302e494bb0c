"""The real-operator targets: Helm command lines, readiness, topology, the operator pod handle."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from urllib3.exceptions import ReadTimeoutError

from mochaos.cluster.commands import RecordingRunner, apply_objects, check_version
from mochaos.cluster.minio import ACCESS_KEY, BUCKET, MINIO_IMAGE, SECRET_KEY, SECRET_NAME, S3Store
from mochaos.errors import EXIT_INFRA, EXIT_USAGE, InfraError, UsageError
from mochaos.operator.helm import (
    HELM,
    KRUISE_IMAGE,
    ChartOptions,
    helm_commands,
    install_chart,
    pending_webhooks,
)
from mochaos.operator.image import (
    DEFAULT_MO_IMAGE,
    ImageTarget,
    InstalledTarget,
    PodOperator,
    Topology,
    image_version,
    parse_log_timestamp,
    render_claimset,
    render_topology,
    split_log_line,
)
from mochaos.paths import cache_dir
from mochaos.types import API_VERSION, CLAIMSET_LABEL, POOL_NAME_LABEL, RUN_ID_LABEL, Cluster

REF = "matrixorigin/matrixone-operator:nightly-abc1234-20260601"
CLUSTER = Cluster(
    name="mochaos", provider="kind", kubeconfig=Path("/s/kubeconfig"), version="v1.36.4",
    context="kind-mochaos",
)  # fmt: skip
STORE = S3Store("http://172.18.0.9:9000", BUCKET, ACCESS_KEY, SECRET_KEY, "docker")
HELM_VERSION = "v3.22.0"


# -- helm command lines -------------------------------------------------------------------


def test_helm_commands_for_the_chart_repository() -> None:
    options = ChartOptions(version="1.3.0-alpha.3", timeout=600)
    commands = helm_commands(
        helm="helm", cluster=CLUSTER, repository="matrixorigin/matrixone-operator",
        tag="nightly-abc1234-20260601", options=options, helm_home=Path("/h"),
    )  # fmt: skip
    repo = "--repository-config /h/repositories.yaml --repository-cache /h/cache"
    assert [" ".join(c) for c in commands] == [
        "helm repo add matrixone-operator https://matrixorigin.github.io/matrixone-operator "
        f"--force-update {repo}",
        "helm upgrade --install mo matrixone-operator/matrixone-operator --version 1.3.0-alpha.3 "
        "--namespace mo-system --create-namespace --wait --timeout 600s "
        "--set image.repository=matrixorigin/matrixone-operator "
        "--set image.tag=nightly-abc1234-20260601 --set image.pullPolicy=IfNotPresent "
        "--set kruise.enabled=true --set kruise.manager.replicas=1 "
        "--set featureGates.cnLabel=true --set featureGates.cnPool=true "
        f"--kubeconfig /s/kubeconfig --kube-context kind-mochaos {repo}",
    ]


def test_helm_commands_for_a_chart_directory_and_custom_release() -> None:
    options = ChartOptions(
        chart_path=Path("/src/charts/matrixone-operator"), release="qual", namespace="qual-system",
        kruise_replicas=2, timeout=900, extra_set=("resources.requests.cpu=50m",),
    )  # fmt: skip
    no_context = Cluster(name="x", provider="existing", kubeconfig=Path("/k"), version="v1")
    (command,) = helm_commands(
        helm="/usr/bin/helm", cluster=no_context, repository="r/op", tag="t",
        options=options, helm_home=Path("/h"),
    )  # fmt: skip
    text = " ".join(command)
    assert text.startswith(
        "/usr/bin/helm upgrade --install qual /src/charts/matrixone-operator --dependency-update "
        "--namespace qual-system --create-namespace --wait --timeout 900s"
    )
    assert "--set kruise.manager.replicas=2" in text
    assert "--set resources.requests.cpu=50m" in text
    assert "--kube-context" not in text
    assert "--version" not in text


def _fake_helm_path(tmp_path: Path) -> str:
    d = tmp_path / "bin"
    d.mkdir()
    (d / "helm").write_text("#!/bin/sh\n")
    (d / "helm").chmod(0o755)
    return str(d)


def test_install_chart_checks_helm_then_adds_the_repo_and_upgrades(tmp_path: Path) -> None:
    runner = RecordingRunner({"helm version": "v3.22.0+g1\n"})
    install_chart(
        cluster=CLUSTER, repository="r/op", tag="t", options=ChartOptions(), runner=runner,
        helm_home=tmp_path / "helm", search_path=_fake_helm_path(tmp_path),
    )  # fmt: skip
    assert [c.split(" --")[0] for c in runner.commands()] == [
        "helm version",
        "helm repo add matrixone-operator https://matrixorigin.github.io/matrixone-operator",
        "helm upgrade",
    ]
    assert (tmp_path / "helm").is_dir()


def test_missing_helm_is_an_infra_error_naming_the_install_command(tmp_path: Path) -> None:
    runner = RecordingRunner()
    with pytest.raises(InfraError) as info:
        install_chart(
            cluster=CLUSTER, repository="r/op", tag="t", options=ChartOptions(), runner=runner,
            helm_home=tmp_path, search_path=str(tmp_path),
        )  # fmt: skip
    assert str(info.value) == (
        "helm not found on PATH: install it with `go install helm.sh/helm/v3/cmd/helm@v3.22.0` "
        "(or your package manager)"
    )
    assert info.value.exit_code == EXIT_INFRA
    assert runner.calls == []


def test_old_helm_is_refused_before_installing(tmp_path: Path) -> None:
    runner = RecordingRunner({"helm version": "v3.5.0+g32c2223\n"})
    with pytest.raises(InfraError, match=r"^helm 3\.5\.0 is too old"):
        install_chart(
            cluster=CLUSTER, repository="r/op", tag="t", options=ChartOptions(), runner=runner,
            helm_home=tmp_path, search_path=_fake_helm_path(tmp_path),
        )  # fmt: skip
    assert runner.commands() == ["helm version --short"]


def test_chart_fullname_rule_names_the_deployment() -> None:
    assert ChartOptions().deployment == "mo-matrixone-operator"
    assert ChartOptions(release="matrixone-operator-ci").deployment == "matrixone-operator-ci"
    assert ChartOptions(deployment_name="custom").deployment == "custom"
    assert ChartOptions(release="qa").selector == (
        "app.kubernetes.io/name=matrixone-operator,app.kubernetes.io/instance=qa"
    )


def _webhooks(name: str, *bundles: Any) -> Any:
    hooks = [SimpleNamespace(client_config=SimpleNamespace(ca_bundle=b)) for b in bundles]
    return SimpleNamespace(metadata=SimpleNamespace(name=name), webhooks=hooks)


def test_pending_webhooks_are_those_still_carrying_the_placeholder_ca() -> None:
    confs = [
        _webhooks("matrixone-operator-mutating-webhook-mo", "LS0tLS1CRUdJTg==", "Cg=="),
        _webhooks("matrixone-operator-validating-webhook-mo", b"LS0tLS1CRUdJTg=="),
        _webhooks("kruise-mutating-webhook-configuration", None),
        _webhooks("kruise-validating-webhook-configuration", "LS0tLS1CRUdJTg=="),
        _webhooks("someone-elses-webhook", "Cg=="),
        _webhooks("matrixone-operator-mutating-webhook-other-release", "Cg=="),
    ]
    assert pending_webhooks(confs, "mo") == [
        "matrixone-operator-mutating-webhook-mo",
        "kruise-mutating-webhook-configuration",
    ]
    assert pending_webhooks(confs[1:2] + confs[3:4], "mo") == []


# -- targets ---------------------------------------------------------------------------------


def test_image_target_spec_version_and_images() -> None:
    target = ImageTarget(ref=REF)
    assert target.spec == f"image:{REF}"
    assert target.version == "nightly-abc1234-20260601"
    assert (target.repository, target.tag) == ("matrixorigin/matrixone-operator", target.version)
    assert target.images == (REF, DEFAULT_MO_IMAGE, KRUISE_IMAGE)
    assert ImageTarget(ref=REF, minio="in-cluster").images[-1] == MINIO_IMAGE


def test_image_target_refuses_bad_input() -> None:
    with pytest.raises(UsageError, match="uses a digest") as info:
        ImageTarget(ref="matrixorigin/matrixone-operator@sha256:" + "0" * 64)
    assert info.value.exit_code == EXIT_USAGE
    with pytest.raises(UsageError, match="unknown MinIO mode 'cloud'"):
        ImageTarget(ref=REF, minio="cloud")


def test_installed_target_defaults() -> None:
    target = InstalledTarget()
    assert (target.spec, target.version, target.mo_image) == (
        "installed",
        "unknown",
        DEFAULT_MO_IMAGE,
    )


@pytest.mark.parametrize(
    ("image", "version"),
    [
        (REF, "nightly-abc1234-20260601"),
        ("reg:5000/op", "latest"),
        ("op@sha256:0123456789abcdef0123", "0123456789ab"),
        ("op:v1@sha256:0123", "v1"),
    ],
)
def test_image_version(image: str, version: str) -> None:
    assert image_version(image) == version


def test_image_target_install_runs_helm_then_waits_for_the_operator_local(
    cluster, tmp_path: Path
) -> None:
    from mochaos.kube import new_api_client

    runner = RecordingRunner({"helm version": "v3.22.0+g1\n"})
    target = ImageTarget(
        ref=REF, chart=ChartOptions(ready_timeout=0.5), runner=runner,
        search_path=_fake_helm_path(tmp_path), state=tmp_path / "state",
        client_factory=lambda c: new_api_client(c.kubeconfig, user_agent="mochaos/test"),
        progress=lambda line: None,
    )  # fmt: skip
    # Helm is recorded, not run: nothing installs the operator, so the wait must give up
    # naming what it was waiting for.
    with pytest.raises(InfraError) as info:
        target.install(cluster)
    assert str(info.value).startswith("matrixone-operator not ready after ")
    assert "kubectl -n mo-system logs deploy/mo-matrixone-operator" in str(info.value)
    assert [c.split(" ")[1] for c in runner.commands()] == ["version", "repo", "upgrade"]
    assert f"--set image.tag={target.tag}" in runner.commands()[-1]


def test_installed_target_needs_an_operator_in_the_cluster_local(cluster) -> None:
    from mochaos.kube import new_api_client

    target = InstalledTarget(
        client_factory=lambda c: new_api_client(c.kubeconfig, user_agent="mochaos/test"),
        progress=lambda line: None,
    )
    with pytest.raises(InfraError) as info:
        target.install(cluster)
    assert str(info.value) == (
        "no matrixone-operator Deployment in the cluster: "
        "install it, or use --operator=image:<ref> to install one with Helm"
    )


# -- the MatrixOne topology ---------------------------------------------------------------------


def _topology(namespace: str = "e2e-1", **kw: Any) -> dict[str, dict[str, Any]]:
    docs = render_topology(
        namespace=namespace, run_id="r1", mo_image="matrixorigin/matrixone:1.2.3", store=STORE, **kw
    )
    return {d["kind"]: d for d in docs}


def test_topology_objects_in_apply_order_all_namespaced_and_labelled() -> None:
    docs = render_topology(namespace="e2e-1", run_id="r1", mo_image="mo:1", store=STORE)
    assert [d["kind"] for d in docs] == ["Secret", "LogSet", "DNSet", "CNPool"]
    for doc in docs:
        assert doc["metadata"]["namespace"] == "e2e-1"
        assert doc["metadata"]["labels"][RUN_ID_LABEL] == "r1"
    assert {d["apiVersion"] for d in docs[1:]} == {API_VERSION}


def test_logset_shape_follows_the_operators_e2e() -> None:
    # OPERATOR-BEHAVIOUR §12: LogSet 3 replicas, small volume, S3 type minio, a path under the
    # bucket, the MinIO endpoint and the Secret; the schema requires replicas, sharedStorage,
    # volume (the CRD is not available offline, so this is checked by shape).
    logset = _topology()["LogSet"]
    spec = logset["spec"]
    assert {"replicas", "sharedStorage", "volume"} <= set(spec)
    assert spec["replicas"] == 3
    assert spec["image"] == "matrixorigin/matrixone:1.2.3"
    assert spec["volume"] == {"size": "100Mi"}
    assert spec["sharedStorage"] == {
        "s3": {
            "type": "minio",
            "path": "matrixone/e2e-1",
            "endpoint": "http://172.18.0.9:9000",
            "secretRef": {"name": SECRET_NAME},
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
    assert spec["deps"]["logSet"]["metadata"]["name"] == objs["LogSet"]["metadata"]["name"]
    assert spec["deps"]["dnSet"]["metadata"]["name"] == objs["DNSet"]["metadata"]["name"]
    # A claim selecting the pool-name label also matches the pool (scale-out on demand).
    assert spec["podLabels"][POOL_NAME_LABEL] == pool["metadata"]["name"]


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
    assert all(r == {"cpu": "100m", "memory": "256Mi"} for r in requests)
    # At most 10 MatrixOne pods at 100m CPU / 256Mi requested each: 1 core and 2.5 GiB,
    # within a 4-core / 8 GB runner.
    assert pods <= 10


def test_claimset_selects_its_own_claims_and_has_template_labels() -> None:
    cs = render_claimset(namespace="e2e-1", run_id="r1", name="cs-a", replicas=2)
    assert cs["kind"] == "CNClaimSet"
    assert cs["spec"]["replicas"] == 2
    assert cs["spec"]["selector"] == {"matchLabels": {CLAIMSET_LABEL: "cs-a"}}
    # The operator writes into template.metadata.labels, so it must exist (OPERATOR-BEHAVIOUR §5.3).
    assert cs["spec"]["template"]["metadata"]["labels"] == {RUN_ID_LABEL: "r1"}
    assert cs["spec"]["template"]["spec"]["selector"] == {"matchLabels": {POOL_NAME_LABEL: "pool"}}


# -- server-side dry-run on the local cluster ----------------------------------------------------


def _ensure_crds(kube: Any) -> None:
    from mochaos.operator.crds import own_crds

    apply_objects(kube, list(own_crds().docs))


def test_rendered_pool_and_claimset_pass_the_crd_schemas_local(kube, namespace) -> None:
    _ensure_crds(kube)
    pool = _topology(namespace)["CNPool"]
    claimset = render_claimset(namespace=namespace, run_id="r1", name="cs-a", replicas=2)
    applied = apply_objects(kube, [pool, claimset], dry_run=True)
    # Nothing was pruned by the structural schemas: the fields the operator reads survive.
    assert applied[0]["spec"]["strategy"]["scaleStrategy"] == {"maxIdle": 2, "maxPods": 6}
    assert applied[0]["spec"]["podLabels"][POOL_NAME_LABEL] == "pool"
    assert applied[1]["spec"]["template"]["metadata"]["labels"] == {RUN_ID_LABEL: "r1"}
    assert applied[1]["spec"]["selector"] == {"matchLabels": {CLAIMSET_LABEL: "cs-a"}}
    assert applied[1]["metadata"]["namespace"] == namespace


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

    from mochaos.cluster.commands import wait_for
    from mochaos.operator.image import prepare_namespace

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
                kube, namespace=namespace, mo_image="matrixorigin/matrixone:1.2.3", store=STORE,
                topology=Topology(), progress=lambda line: None,
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
    spec = outcome["spec"]
    assert spec.template["image"] == "matrixorigin/matrixone:1.2.3"
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


# -- the operator pod handle ----------------------------------------------------------------------


def stamp(ns: int) -> str:
    seconds, frac = divmod(ns, 1_000_000_000)
    text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{frac:09d}".rstrip("0").rstrip(".") + "Z"


def test_log_timestamps_parse_to_nanoseconds() -> None:
    assert parse_log_timestamp("2026-05-30T11:24:06.5Z") == 1780140246_500000000
    assert parse_log_timestamp("2026-05-30T11:24:06.000000001Z") == 1780140246_000000001
    assert parse_log_timestamp("2026-05-30T11:24:06Z") == 1780140246_000000000
    assert split_log_line('2026-05-30T11:24:06Z {"msg":"finalize CNClaim"}') == (
        1780140246_000000000,
        '{"msg":"finalize CNClaim"}',
    )
    assert split_log_line("no stamp here") is None
    now = time.time_ns()
    assert parse_log_timestamp(stamp(now)) == now


def pod(name: str, uid: str, *, created: float, phase: str = "Running", ready: bool = True) -> Any:
    return SimpleNamespace(
        metadata=SimpleNamespace(
            name=name, uid=uid, creation_timestamp=created, deletion_timestamp=None
        ),
        status=SimpleNamespace(
            phase=phase,
            conditions=[SimpleNamespace(type="Ready", status="True" if ready else "False")],
        ),
    )


class FakeStream:
    """A followed log: yields its chunks, then times out (idle) or ends (pod gone)."""

    def __init__(self, lines: list[str], *, idle: bool) -> None:
        self.lines = lines
        self.idle = idle

    def stream(self, amt: int, decode_content: bool = True):
        for line in self.lines:
            yield (line + "\n").encode()
        if self.idle:
            raise ReadTimeoutError(None, "/log", "read timed out")

    def release_conn(self) -> None:
        pass


class FakeCore:
    def __init__(self) -> None:
        self.pods: list[Any] = []
        self.logs: dict[str, list[list[str]]] = {}
        self.deleted: list[tuple[str, int | None]] = []
        self.on_delete = None

    def list_namespaced_pod(self, namespace: str, **kw: Any) -> Any:
        return SimpleNamespace(items=list(self.pods))

    def read_namespaced_pod_log(self, name: str, namespace: str, **kw: Any) -> FakeStream:
        assert kw["follow"] is True and kw["timestamps"] is True
        assert kw["_preload_content"] is False
        batches = self.logs[name]
        lines = batches.pop(0) if len(batches) > 1 else batches[0]
        return FakeStream(lines, idle=True)

    def delete_namespaced_pod(self, name: str, namespace: str, **kw: Any) -> None:
        self.deleted.append((name, kw.get("grace_period_seconds")))
        if self.on_delete:
            self.on_delete(name)


class FakeApps:
    def __init__(self, replicas: int = 1) -> None:
        self.replicas = replicas
        self.scaled: list[int] = []

    def read_namespaced_deployment(self, name: str, namespace: str, **kw: Any) -> Any:
        return SimpleNamespace(spec=SimpleNamespace(replicas=self.replicas))

    def patch_namespaced_deployment_scale(self, name: str, namespace: str, body, **kw) -> None:
        self.scaled.append(body["spec"]["replicas"])


def operator_with(
    core: FakeCore, apps: FakeApps | None = None, log: Path | None = None
) -> PodOperator:
    return PodOperator(
        target=f"image:{REF}", version="v", api_client=None, namespace="mo-system",
        deployment="mo-matrixone-operator", selector="app.kubernetes.io/instance=mo",
        log_path=log, progress=lambda line: None, core=core, apps=apps or FakeApps(),
    )  # fmt: skip


def test_follow_log_skips_old_and_repeated_lines_and_follows_a_replacement_pod(
    tmp_path: Path,
) -> None:
    core = FakeCore()
    op = operator_with(core, log=tmp_path / "operator.log")
    t0 = op.started_ns
    s = 1_000_000_000
    core.pods = [pod("op-a", "uid-a", created=1.0)]
    core.logs["op-a"] = [
        [f"{stamp(t0 - s)} before-start", f"{stamp(t0 + s)} one", f"{stamp(t0 + 2 * s)} two"],
        # The reconnect after an idle timeout repeats what was already seen.
        [f"{stamp(t0 + s)} one", f"{stamp(t0 + 2 * s)} two", f"{stamp(t0 + 3 * s)} three"],
    ]
    core.logs["op-b"] = [[f"{stamp(t0 + 4 * s)} b-one"]]
    stop = threading.Event()
    seen: list[str] = []
    for line in op.follow_log(stop):
        seen.append(line)
        if line == "three":
            core.pods = [pod("op-b", "uid-b", created=2.0)]
        if line == "b-one":
            stop.set()
    assert seen == ["one", "two", "three", "b-one"]
    assert (tmp_path / "operator.log").read_text() == "one\ntwo\nthree\nb-one\n"


def test_follow_log_returns_when_stopped_without_a_pod() -> None:
    core = FakeCore()
    stop = threading.Event()
    stop.set()
    assert list(operator_with(core).follow_log(stop)) == []


def test_kill_deletes_the_pod_without_grace_and_restart_waits_for_a_new_one() -> None:
    core = FakeCore()
    core.pods = [pod("op-a", "uid-a", created=1.0)]
    op = operator_with(core)
    op.kill()
    assert core.deleted == [("op-a", 0)]

    def replace(name: str) -> None:
        core.pods = [pod("op-c", "uid-c", created=3.0)]

    core.on_delete = replace
    core.pods = [pod("op-b", "uid-b", created=2.0)]
    op.restart()
    assert core.deleted[-1] == ("op-b", None)


def test_pause_scales_to_zero_and_back() -> None:
    apps = FakeApps(replicas=1)
    op = operator_with(FakeCore(), apps)
    op.pause(3600)
    assert apps.scaled == [0]
    op.stop()
    assert apps.scaled == [0, 1]
    op.stop()
    assert apps.scaled == [0, 1]
    op.pause(0.01)
    deadline = time.monotonic() + 30
    while apps.scaled != [0, 1, 0, 1] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert apps.scaled == [0, 1, 0, 1]


def test_operator_identity() -> None:
    op = operator_with(FakeCore())
    assert op.user_agent == "manager/"
    assert op.username == "system:serviceaccount:mo-system:mo-matrixone-operator"
    assert (op.target, op.version) == (f"image:{REF}", "v")


# -- the real helm CLI ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def helm_dir() -> Path:
    """A directory with the real helm CLI (go-installed into the cache when missing)."""
    target = cache_dir() / "bin" / f"helm-{HELM_VERSION}"
    if not (target / "helm").exists():
        go = shutil.which("go")
        if go is None:
            pytest.skip("go is not installed: cannot build the helm CLI")
        target.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [go, "install", f"helm.sh/helm/v3/cmd/helm@{HELM_VERSION}"],
            env={**os.environ, "GOBIN": str(target)},
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
        if proc.returncode != 0:
            pytest.skip(f"cannot build helm from the Go module proxy: {proc.stderr[-200:]}")
    return target


def test_real_helm_version_passes_our_minimum(helm_dir: Path) -> None:
    from mochaos.cluster.commands import SubprocessRunner

    found = check_version(HELM, str(helm_dir / "helm"), runner=SubprocessRunner(progress=None))
    assert found >= (3, 22, 0)


def _tiny_chart(root: Path) -> Path:
    """A chart that reads the values our command sets, in place of the operator's chart."""
    chart = root / "tiny"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tiny\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("image: {repository: x, tag: y, pullPolicy: Always}\n")
    (chart / "templates" / "deployment.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n"
        "spec:\n  replicas: 1\n  selector: {matchLabels: {app: tiny}}\n  template:\n"
        "    metadata: {labels: {app: tiny}}\n    spec:\n      containers:\n"
        "        - name: c\n"
        '          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"\n'
        "          imagePullPolicy: {{ .Values.image.pullPolicy }}\n"
    )
    return chart


def test_real_helm_runs_our_upgrade_command_on_the_local_cluster_local(
    helm_dir: Path, cluster, kube, namespace, tmp_path: Path
) -> None:
    from kubernetes import client

    from mochaos.cluster.commands import SubprocessRunner

    options = ChartOptions(
        chart_path=_tiny_chart(tmp_path), release="tiny", namespace=namespace, timeout=120
    )
    install_chart(
        cluster=cluster, repository="matrixorigin/matrixone-operator", tag="nightly-x",
        options=options, runner=SubprocessRunner(progress=None), helm_home=tmp_path / "helm",
        search_path=str(helm_dir),
    )  # fmt: skip
    dep = client.AppsV1Api(kube).read_namespaced_deployment("tiny", namespace)
    container = dep.spec.template.spec.containers[0]
    assert container.image == "matrixorigin/matrixone-operator:nightly-x"
    assert container.image_pull_policy == "IfNotPresent"
