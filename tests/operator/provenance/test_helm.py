"""The operator's Helm chart: command lines for Helm 3 and 4, values, readiness, the real CLIs."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from mochaos import exits
from mochaos.errors import BuildError, InfraError
from mochaos.kube import Cluster
from mochaos.operator.provenance.helm import (
    KRUISE_FEATURE_GATES,
    ChartOptions,
    chart_values,
    escape_set_value,
    helm_commands,
    helm_major,
    install_chart,
    pending_webhooks,
)
from mochaos.paths import cache_dir
from mochaos.tooling.runner import RecordingRunner, SubprocessRunner

CLUSTER = Cluster(
    name="mochaos", provider="kind", kubeconfig=Path("/s/kubeconfig"), version="v1.36.4",
    context="kind-mochaos",
)  # fmt: skip
HELM_VERSIONS = {
    3: ("v3.22.0", "helm.sh/helm/v3/cmd/helm"),
    4: ("v4.3.2", "helm.sh/helm/v4/cmd/helm"),
}
GATES = (
    r"StatefulSetAutoDeletePVC=true\,PodUnavailableBudgetDeleteGate=true\,"
    r"PodUnavailableBudgetUpdateGate=true\,KruiseDaemon=false"
)


# -- command lines ----------------------------------------------------------------------------


def test_helm_3_commands_for_the_chart_repository() -> None:
    options = ChartOptions(version="1.3.0-alpha.3", timeout=600)
    commands = helm_commands(
        helm="helm", helm_major=3, cluster=CLUSTER, repository="matrixorigin/matrixone-operator",
        tag="nightly-abc1234-20260601", options=options, helm_home=Path("/h"),
    )  # fmt: skip
    repo = "--repository-config /h/repositories.yaml --repository-cache /h/cache"
    assert [" ".join(c) for c in commands] == [
        "helm repo add matrixone-operator https://matrixorigin.github.io/matrixone-operator "
        f"--force-update {repo}",
        "helm upgrade --install mo matrixone-operator/matrixone-operator --version 1.3.0-alpha.3 "
        "--namespace mo-system --create-namespace --wait --timeout 600s "
        "--set-string image.repository=matrixorigin/matrixone-operator "
        "--set-string image.tag=nightly-abc1234-20260601 --set image.pullPolicy=IfNotPresent "
        "--set kruise.enabled=true --set kruise.manager.replicas=1 "
        f"--set-string kruise.featureGates={GATES} "
        "--set featureGates.cnLabel=true --set featureGates.cnPool=true "
        f"--kubeconfig /s/kubeconfig --kube-context kind-mochaos {repo}",
    ]


def test_helm_4_names_the_wait_strategy_that_helm_3s_wait_means() -> None:
    def upgrade(major: int) -> list[str]:
        return helm_commands(
            helm="helm", helm_major=major, cluster=CLUSTER, repository="r/op", tag="t",
            options=ChartOptions(), helm_home=Path("/h"),
        )[-1]  # fmt: skip

    assert "--wait" in upgrade(3) and "--wait=watcher" not in upgrade(3)
    assert "--wait=watcher" in upgrade(4) and "--wait" not in upgrade(4)


def test_helm_commands_for_a_chart_directory_and_custom_release() -> None:
    options = ChartOptions(
        chart_path=Path("/src/charts/matrixone-operator"), release="qual", namespace="qual-system",
        kruise_replicas=2, timeout=900, extra_set=("resources.requests.cpu=50m",),
    )  # fmt: skip
    no_context = Cluster(name="x", provider="existing", kubeconfig=Path("/k"), version="v1")
    (command,) = helm_commands(
        helm="/usr/bin/helm", helm_major=3, cluster=no_context, repository="r/op", tag="t",
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


def test_the_image_tag_and_kruise_gates_are_set_as_strings() -> None:
    values = dict((v.split("=", 1)[0], (f, v)) for f, v in
                  chart_values(repository="r/op", tag="0", options=ChartOptions()))  # fmt: skip
    assert values["image.tag"] == ("--set-string", "image.tag=0")
    assert values["image.repository"][0] == "--set-string"
    assert values["kruise.featureGates"] == ("--set-string", f"kruise.featureGates={GATES}")


def test_the_kruise_daemon_is_switched_off_and_the_charts_gates_kept() -> None:
    gates = dict(g.split("=") for g in KRUISE_FEATURE_GATES.split(","))
    assert gates.pop("KruiseDaemon") == "false"
    # The operator chart's own defaults (charts/matrixone-operator/values.yaml at 2301e3b).
    assert gates == {
        "StatefulSetAutoDeletePVC": "true",
        "PodUnavailableBudgetDeleteGate": "true",
        "PodUnavailableBudgetUpdateGate": "true",
    }


def test_escape_set_value_protects_commas_and_backslashes() -> None:
    assert escape_set_value("a=1,b=2") == r"a=1\,b=2"
    assert escape_set_value("x\\y") == "x\\\\y"


# -- helm versions ------------------------------------------------------------------------------


def _fake_helm_path(tmp_path: Path) -> str:
    d = tmp_path / "bin"
    d.mkdir()
    (d / "helm").write_text("#!/bin/sh\n")
    (d / "helm").chmod(0o755)
    return str(d)


@pytest.mark.parametrize(("output", "major"), [("v3.22.0+g1\n", 3), ("v3.8.1\n", 3),
                                               ("v4.3.2+gabc\n", 4), ("v4.3\n", 4)])  # fmt: skip
def test_helm_3_and_4_are_accepted(output: str, major: int) -> None:
    assert helm_major("helm", runner=RecordingRunner({"helm version": output})) == major


def test_old_and_unknown_helm_majors_are_refused() -> None:
    with pytest.raises(InfraError, match=r"^helm 3\.5\.0 is too old"):
        helm_major("helm", runner=RecordingRunner({"helm version": "v3.5.0+g32c2223\n"}))
    with pytest.raises(InfraError) as info:
        helm_major("helm", runner=RecordingRunner({"helm version": "v5.0.0\n"}))
    assert str(info.value) == (
        "helm 5.0.0 is a major version mo-chaos does not know (its --wait flag differs between "
        "majors): use helm 3 (>= 3.8) or helm 4"
    )


def test_install_chart_checks_helm_then_adds_the_repo_and_upgrades(tmp_path: Path) -> None:
    runner = RecordingRunner({"helm version": "v4.3.2+g1\n"})
    install_chart(
        cluster=CLUSTER, repository="r/op", tag="t", options=ChartOptions(), runner=runner,
        helm_home=tmp_path / "helm", search_path=_fake_helm_path(tmp_path),
    )  # fmt: skip
    assert [c.split(" --")[0] for c in runner.commands()] == [
        "helm version",
        "helm repo add matrixone-operator https://matrixorigin.github.io/matrixone-operator",
        "helm upgrade",
    ]
    assert "--wait=watcher" in runner.commands()[-1]
    assert (tmp_path / "helm").is_dir()


def test_missing_helm_is_built_from_its_module_and_a_failed_build_says_why(
    tmp_path: Path,
) -> None:
    runner = RecordingRunner({"helm version": "v3.22.0+g1"})
    install_chart(
        cluster=CLUSTER, repository="r/op", tag="t", options=ChartOptions(), runner=runner,
        helm_home=tmp_path, search_path=str(tmp_path), build_helm=lambda: "/cache/helm",
    )  # fmt: skip
    assert runner.calls[0][0] == "/cache/helm"
    assert runner.commands()[-1].startswith("helm upgrade --install mo ")

    def no_go() -> str:
        raise BuildError("go not found", hint="install Go >= 1.26 and put it on PATH")

    runner = RecordingRunner()
    with pytest.raises(InfraError) as info:
        install_chart(
            cluster=CLUSTER, repository="r/op", tag="t", options=ChartOptions(), runner=runner,
            helm_home=tmp_path, search_path=str(tmp_path), build_helm=no_go,
        )  # fmt: skip
    assert str(info.value) == "go not found: install Go >= 1.26 and put it on PATH"
    assert info.value.exit_code == exits.INFRA
    assert runner.calls == []


def test_a_vendored_local_chart_is_installed_without_a_dependency_update(tmp_path: Path) -> None:
    helm = "/usr/bin/helm"
    common = dict(helm=helm, helm_major=3, cluster=CLUSTER, repository="r/op", tag="t",
                  helm_home=tmp_path)  # fmt: skip
    vendored = ChartOptions(chart_path=tmp_path / "chart", dependency_update=False)
    (install,) = helm_commands(options=vendored, **common)
    assert str(tmp_path / "chart") in install
    assert "--dependency-update" not in install
    (install,) = helm_commands(options=ChartOptions(chart_path=tmp_path / "chart"), **common)
    assert "--dependency-update" in install


def test_old_helm_is_refused_before_installing(tmp_path: Path) -> None:
    runner = RecordingRunner({"helm version": "v3.5.0+g32c2223\n"})
    with pytest.raises(InfraError, match=r"^helm 3\.5\.0 is too old"):
        install_chart(
            cluster=CLUSTER, repository="r/op", tag="t", options=ChartOptions(), runner=runner,
            helm_home=tmp_path, search_path=_fake_helm_path(tmp_path),
        )  # fmt: skip
    assert runner.commands() == ["helm version --short"]


# -- names and readiness ---------------------------------------------------------------------


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


# -- the real helm CLIs ---------------------------------------------------------------------------


@pytest.fixture(scope="module", params=sorted(HELM_VERSIONS), ids=lambda m: f"helm{m}")
def helm_dir(request: pytest.FixtureRequest) -> Path:
    """A directory with the real helm CLI (go-installed into the cache when missing)."""
    version, package = HELM_VERSIONS[request.param]
    target = cache_dir() / "bin" / f"helm-{version}"
    if not (target / "helm").exists():
        go = shutil.which("go")
        if go is None:
            pytest.skip("go is not installed: cannot build the helm CLI")
        target.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [go, "install", f"{package}@{version}"],
            env={**os.environ, "GOBIN": str(target)},
            capture_output=True,
            text=True,
            timeout=1200,
            check=False,
        )
        if proc.returncode != 0:
            pytest.skip(f"cannot build helm from the Go module proxy: {proc.stderr[-200:]}")
    return target


def test_real_helm_version_passes_our_check(helm_dir: Path) -> None:
    major = helm_major(str(helm_dir / "helm"), runner=SubprocessRunner(progress=None))
    assert (major, helm_dir.name.split("-v")[1][0]) in ((3, "3"), (4, "4"))


def _tiny_chart(root: Path) -> Path:
    """A chart that reads the values our command sets, in place of the operator's chart."""
    chart = root / "tiny"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tiny\nversion: 0.1.0\n"
                                      "appVersion: 9.9.9\n")  # fmt: skip
    (chart / "values.yaml").write_text(
        "image: {repository: x, tag: y, pullPolicy: Always}\nkruise: {featureGates: ''}\n"
    )
    (chart / "templates" / "deployment.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n"
        "  annotations: {gates: {{ .Values.kruise.featureGates | quote }}}\n"
        "spec:\n  replicas: 1\n  selector: {matchLabels: {app: tiny}}\n  template:\n"
        "    metadata: {labels: {app: tiny}}\n    spec:\n      containers:\n"
        "        - name: c\n"
        '          image: "{{ .Values.image.repository }}:'
        '{{ .Values.image.tag | default .Chart.AppVersion }}"\n'
        "          imagePullPolicy: {{ .Values.image.pullPolicy }}\n"
    )
    return chart


@pytest.mark.parametrize("tag", ["0", "false", "null", "1.30"])
def test_real_helm_keeps_the_tag_and_the_gates_as_written(
    helm_dir: Path, tmp_path: Path, tag: str
) -> None:
    # With --set, Helm reads 0 / false / null as a number, a boolean and nil, and the chart's
    # `default` then falls back to its appVersion: the wrong image, silently.
    argv = [str(helm_dir / "helm"), "template", "t", str(_tiny_chart(tmp_path))]
    for flag, value in chart_values(repository="r/op", tag=tag, options=ChartOptions()):
        argv += [flag, value]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout
    (dep,) = [d for d in yaml.safe_load_all(out) if d]
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == f"r/op:{tag}"
    assert dep["metadata"]["annotations"]["gates"] == KRUISE_FEATURE_GATES
    coerced = subprocess.run(
        [str(helm_dir / "helm"), "template", "t", str(tmp_path / "tiny"), "--set",
         "image.tag=0"], capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    assert '"x:9.9.9"' in coerced


def test_real_helm_runs_our_upgrade_command_on_the_local_cluster_local(
    helm_dir: Path, cluster, kube, namespace, tmp_path: Path
) -> None:
    from kubernetes import client

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
    assert dep.metadata.annotations["gates"] == KRUISE_FEATURE_GATES
