"""Install the matrixone-operator Helm chart (with its OpenKruise dependency) and wait for it.

The chart (repository ``matrixorigin.github.io/matrixone-operator``) deploys
the operator Deployment ``<release>-matrixone-operator``, its webhooks, its
CRDs (as templates: the chart owns them) and, as the ``kruise`` subchart 1.4.0,
OpenKruise's ``kruise-controller-manager`` in ``kruise-system``. Both projects
ship webhook configurations with a placeholder CA bundle that their
controllers fill in at start-up, so "ready" means: Deployments available and
every CA bundle injected.

Helm 3 and Helm 4 are both accepted, knowingly: Helm 4's bare ``--wait`` is
the kstatus "watcher" strategy, which waits for every DaemonSet to be fully
rolled out, where Helm 3 waits for Deployments' minimum availability; we pass
``--wait`` to Helm 3 and ``--wait=watcher`` to Helm 4, and switch off the one
DaemonSet the chart would bring (kruise-daemon, see :data:`KRUISE_FEATURE_GATES`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mochaos.errors import InfraError
from mochaos.images.go_tools import helm_cli
from mochaos.kruise import manager as kruise_manager
from mochaos.kube import Cluster
from mochaos.tooling.progress_callback import say
from mochaos.tooling.runner import Runner
from mochaos.tooling.tools import Tool, check_version, require_tool
from mochaos.tooling.waiting import wait_for

HELM = Tool(
    name="helm",
    minimum=(3, 8, 0),
    why="`helm upgrade --install --wait` with OCI-era chart handling, as the operator's CI uses",
    install="`go install helm.sh/helm/v3/cmd/helm@v3.22.0` (or your package manager)",
    version_args=("version", "--short"),
)
HELM_MAJORS = (3, 4)
"""Helm majors whose flags :func:`helm_commands` knows (tested: 3.22 and 4.3)."""

CHART_REPO_URL = "https://matrixorigin.github.io/matrixone-operator"
CHART_REPO_NAME = "matrixone-operator"
CHART_NAME = "matrixone-operator"
CHART_VERSION = "1.3.0-alpha.3"
"""The chart version on the operator's main branch (2301e3b); its kruise dependency is 1.4.0."""

RELEASE = "mo"
NAMESPACE = "mo-system"
KRUISE_NAMESPACE = "kruise-system"
KRUISE_DEPLOYMENT = "kruise-controller-manager"
KRUISE_IMAGE = "openkruise/kruise-manager:v1.4.0"
"""The kruise subchart's default manager image (preloaded into kind)."""

KRUISE_FEATURE_GATES = kruise_manager.FEATURE_GATES
"""The kruise gates (one home: :data:`mochaos.kruise.manager.FEATURE_GATES`).

kruise-daemon 1.4.0 crash-loops on containerd 2.x (recent kind node images),
and Helm 4's ``--wait`` then times out on its DaemonSet. The kruise chart
leaves the DaemonSet out when the gates contain ``KruiseDaemon=false``
(charts/kruise/templates/manager.yaml), and kruise-manager then turns off the
daemon-backed features (image pre-download, ImagePullJob, PodProbeMarker,
in-place update of env-from-metadata). The operator uses none of them for
the pool: it uses CloneSet (lifecycle hooks, podsToDelete, specified-delete,
in-place image update, which kubelet performs) and Advanced StatefulSet; the
one loss is that an in-place change of a CN's ``config-suffix`` annotation no
longer restarts its container, and no scenario changes CN config.
"""

PLACEHOLDER_CA = "Cg=="
INSTALL_TIMEOUT = 600.0
READY_TIMEOUT = 300.0


@dataclass(frozen=True, slots=True)
class ChartOptions:
    """Where the chart comes from and how it is installed."""

    repo_url: str = CHART_REPO_URL
    version: str = CHART_VERSION
    chart_path: Path | None = None
    dependency_update: bool = True
    """``--dependency-update`` for a local chart (off when its ``charts/`` holds them)."""
    release: str = RELEASE
    namespace: str = NAMESPACE
    kruise_replicas: int = 1
    timeout: float = INSTALL_TIMEOUT
    ready_timeout: float = READY_TIMEOUT
    extra_set: tuple[str, ...] = field(default_factory=tuple)
    deployment_name: str = ""

    @property
    def deployment(self) -> str:
        """The operator Deployment's name: as found, or by the chart's fullname rule."""
        if self.deployment_name:
            return self.deployment_name
        if CHART_NAME in self.release:
            return self.release[:63]
        return f"{self.release}-{CHART_NAME}"[:63]

    @property
    def selector(self) -> str:
        """Label selector of the operator's pods."""
        return f"app.kubernetes.io/name={CHART_NAME},app.kubernetes.io/instance={self.release}"


def kube_flags(cluster: Cluster) -> list[str]:
    """helm's flags that point it at the cluster (never the user's default context)."""
    flags = ["--kubeconfig", str(cluster.kubeconfig)]
    if cluster.context:
        flags += ["--kube-context", cluster.context]
    return flags


def escape_set_value(value: str) -> str:
    """A value for ``--set``/``--set-string``: Helm splits on unescaped commas."""
    return value.replace("\\", "\\\\").replace(",", "\\,")


def chart_values(*, repository: str, tag: str, options: ChartOptions) -> list[tuple[str, str]]:
    """The (flag, ``key=value``) pairs we set on the chart, strings forced where it matters.

    ``--set-string`` keeps a numeric-looking tag (``1.3``, ``20260601``) a
    string; with ``--set`` Helm would turn it into a number.
    """
    return [
        ("--set-string", f"image.repository={repository}"),
        ("--set-string", f"image.tag={tag}"),
        ("--set", "image.pullPolicy=IfNotPresent"),
        ("--set", "kruise.enabled=true"),
        ("--set", f"kruise.manager.replicas={options.kruise_replicas}"),
        ("--set-string", f"kruise.featureGates={escape_set_value(KRUISE_FEATURE_GATES)}"),
        ("--set", "featureGates.cnLabel=true"),
        ("--set", "featureGates.cnPool=true"),
        *(("--set", value) for value in options.extra_set),
    ]


def wait_flag(helm_major: int) -> str:
    """Helm 3's ``--wait``, or Helm 4's equivalent strategy named explicitly."""
    return "--wait" if helm_major < 4 else "--wait=watcher"


def helm_commands(
    *,
    helm: str,
    helm_major: int,
    cluster: Cluster,
    repository: str,
    tag: str,
    options: ChartOptions,
    helm_home: Path,
) -> list[list[str]]:
    """The helm command lines that install (or upgrade) the operator; idempotent as a whole.

    Repositories are kept in ``helm_home`` so the user's own helm setup is untouched.
    """
    repo_flags = [
        "--repository-config", str(helm_home / "repositories.yaml"),
        "--repository-cache", str(helm_home / "cache"),
    ]  # fmt: skip
    commands: list[list[str]] = []
    if options.chart_path is None:
        commands.append(
            [helm, "repo", "add", CHART_REPO_NAME, options.repo_url, "--force-update", *repo_flags]
        )
        chart = [f"{CHART_REPO_NAME}/{CHART_NAME}", "--version", options.version]
    else:
        chart = [str(options.chart_path)]
        if options.dependency_update:
            chart.append("--dependency-update")
    values = chart_values(repository=repository, tag=tag, options=options)
    commands.append(
        [
            helm, "upgrade", "--install", options.release, *chart,
            "--namespace", options.namespace, "--create-namespace",
            wait_flag(helm_major), "--timeout", f"{int(options.timeout)}s",
            *[arg for flag, value in values for arg in (flag, value)],
            *kube_flags(cluster), *repo_flags,
        ]
    )  # fmt: skip
    return commands


def helm_major(helm: str, *, runner: Runner) -> int:
    """The major version of the helm CLI at ``helm``; InfraError when too old or unknown."""
    found = check_version(HELM, helm, runner=runner)
    if found[0] not in HELM_MAJORS:
        raise InfraError(
            f"helm {'.'.join(map(str, found))} is a major version mo-chaos does not know "
            "(its --wait flag differs between majors)",
            hint="use helm 3 (>= 3.8) or helm 4",
        )
    return found[0]


def install_chart(
    *,
    cluster: Cluster,
    repository: str,
    tag: str,
    options: ChartOptions,
    runner: Runner,
    helm_home: Path,
    search_path: str | None = None,
    build_helm: Callable[[], str] | None = None,
) -> None:
    """Run the helm commands (helm on PATH, else ours built from its module: ``build_helm``;
    Helm 3 >= 3.8 or Helm 4)."""
    try:
        helm = require_tool(HELM, search_path=search_path)
    except InfraError:
        say("helm is not on PATH: using the helm built from its module")
        helm = (build_helm or _built_helm_cli)()
    major = helm_major(helm, runner=runner)
    helm_home.mkdir(parents=True, exist_ok=True)
    for argv in helm_commands(
        helm=helm,
        helm_major=major,
        cluster=cluster,
        repository=repository,
        tag=tag,
        options=options,
        helm_home=helm_home,
    ):
        runner(
            argv,
            what=" ".join(argv[1:3]),
            hint=f"`helm status {options.release} -n {options.namespace}` and "
            f"`kubectl -n {options.namespace} get pods` show what is missing",
            timeout=options.timeout + 120,
            echo_stdout=True,
        )


def _built_helm_cli() -> str:
    return str(helm_cli(progress=say))


def _deployment_ready(apps: Any, name: str, namespace: str) -> tuple[bool, str]:
    dep = apps.read_namespaced_deployment(name, namespace, _request_timeout=10)
    want = dep.spec.replicas or 0
    ready = dep.status.available_replicas or 0
    return ready >= want > 0, f"{namespace}/{name}: {ready}/{want} available"


def _text(bundle: str | bytes | None) -> str:
    if isinstance(bundle, bytes):
        return bundle.decode("ascii", errors="replace")
    return bundle or ""


def pending_webhooks(configurations: Sequence[Any], release: str) -> list[str]:
    """Names of the operator's and kruise's webhook configurations still without a CA."""
    mine = (f"matrixone-operator-mutating-webhook-{release}",
            f"matrixone-operator-validating-webhook-{release}")  # fmt: skip
    pending = []
    for conf in configurations:
        name = conf.metadata.name
        if name not in mine and not name.startswith("kruise-"):
            continue
        bundles = [_text(w.client_config.ca_bundle) for w in conf.webhooks or []]
        if any(b in ("", PLACEHOLDER_CA) for b in bundles):
            pending.append(name)
    return pending


def operator_ready(api_client: Any, options: ChartOptions) -> tuple[bool, str]:
    """One poll: both Deployments available and every webhook CA injected."""
    from kubernetes import client

    apps = client.AppsV1Api(api_client)
    for name, namespace in ((options.deployment, options.namespace),
                            (KRUISE_DEPLOYMENT, KRUISE_NAMESPACE)):  # fmt: skip
        done, text = _deployment_ready(apps, name, namespace)
        if not done:
            return False, text
    admission = client.AdmissionregistrationV1Api(api_client)
    confs = [
        *admission.list_mutating_webhook_configuration(_request_timeout=10).items,
        *admission.list_validating_webhook_configuration(_request_timeout=10).items,
    ]
    pending = pending_webhooks(confs, options.release)
    if pending:
        return False, f"webhook CA not injected yet: {', '.join(sorted(pending))}"
    return True, "operator and kruise ready, webhooks injected"


def wait_operator_ready(api_client: Any, options: ChartOptions) -> None:
    """Block until :func:`operator_ready`; InfraError with the last state after the timeout."""
    wait_for(
        lambda: operator_ready(api_client, options),
        what="matrixone-operator",
        timeout=options.ready_timeout,
        hint=f"`kubectl -n {options.namespace} logs deploy/{options.deployment}` shows why",
    )
