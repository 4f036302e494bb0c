"""The pytest plugin: options, fixtures, markers and report hooks — thin by design.

Fixtures: ``cluster`` (session), ``kube`` (session API client), ``namespace``
(fresh, labelled with the run id, deleted after the test), ``operator_target``
(session: installed once), ``operator`` (started per test namespace). Everything
else lives in the layers; this module only wires them to pytest.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from chaos import runstate
from chaos.cluster import PROVIDERS, make_provider
from chaos.errors import InfraError, MochaosError, UsageError
from chaos.kube import check_reachable, new_api_client
from chaos.types import RUN_ID_LABEL, CheckOptions, Cluster, OperatorTarget, RunningOperator


@dataclass(frozen=True)
class RunConfig:
    """The mo-chaos options of one pytest run, parsed once."""

    run_id: str
    cluster: str
    kubeconfig: Path | None
    context: str | None
    allow_contexts: tuple[str, ...]
    keep_cluster: bool
    operator: str
    time_scale: float
    finalize_timeout: float
    retry_budget: int
    migration_timeout: float
    chaos_seed: int
    reports_dir: Path

    def check_options(self) -> CheckOptions:
        """Invariant thresholds in wall seconds (operator-time values scaled)."""
        s = self.time_scale
        return CheckOptions(
            finalize_timeout=self.finalize_timeout * s,
            retry_budget=self.retry_budget,
            retry_window=self.finalize_timeout * s,
            grace=15.0 * s,
            migration_timeout=self.migration_timeout * s,
            converge_timeout=60.0 * s,
            time_scale=s,
        )


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the mo-chaos options."""
    g = parser.getgroup("mo-chaos", "mo-chaos chaos testing of the MatrixOne operator")
    g.addoption(
        "--cluster",
        default="local",
        choices=PROVIDERS,
        help="cluster provider: local (embedded, default), kind, existing",
    )
    g.addoption("--kubeconfig", type=Path, default=None, help="kubeconfig for --cluster=existing")
    g.addoption("--context", default=None, help="kubeconfig context for --cluster=existing")
    g.addoption(
        "--allow-context",
        action="append",
        default=[],
        help="a context --cluster=existing may use (repeatable); others are refused",
    )
    g.addoption("--keep-cluster", action="store_true", help="kind: keep the cluster afterwards")
    g.addoption(
        "--operator",
        default="model:upstream",
        help="operator target: model:<profile>, binary:<path>, image:<ref>, installed",
    )
    g.addoption(
        "--time-scale",
        type=float,
        default=1.0,
        help="multiply the model's operator intervals and our thresholds (default 1.0)",
    )
    g.addoption(
        "--finalize-timeout",
        type=float,
        default=60.0,
        help="seconds a deleting CNClaim may take (operator time, default 60)",
    )
    g.addoption(
        "--retry-budget",
        type=int,
        default=10,
        help="finalize retries allowed per claim in the finalize window (default 10)",
    )
    g.addoption(
        "--migration-timeout",
        type=float,
        default=120.0,
        help="seconds a migration may take to end (operator time, default 120)",
    )
    g.addoption(
        "--chaos-seed",
        type=int,
        default=None,
        help="seed for every random choice (printed on failure to replay a run)",
    )
    g.addoption("--reports-dir", type=Path, default=Path("reports"),
                help="root of the run reports (default: reports/)")  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    """Parse options once (usage errors stop the run) and register markers."""
    config.addinivalue_line("markers", "scenario: a chaos scenario against an operator target")
    config.addinivalue_line("markers", "model_only: needs the reference model (model: targets)")
    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput["mochaos_run_id"] if workerinput else _new_run_id()
    opt = config.getoption
    if opt("time_scale") <= 0:
        raise pytest.UsageError("--time-scale must be > 0")
    seed = opt("chaos_seed")
    config.mochaos = RunConfig(  # type: ignore[attr-defined]
        run_id=run_id,
        cluster=opt("cluster"),
        kubeconfig=opt("kubeconfig"),
        context=opt("context"),
        allow_contexts=tuple(opt("allow_context")),
        keep_cluster=opt("keep_cluster"),
        operator=opt("operator"),
        time_scale=opt("time_scale"),
        finalize_timeout=opt("finalize_timeout"),
        retry_budget=opt("retry_budget"),
        migration_timeout=opt("migration_timeout"),
        chaos_seed=seed if seed is not None else secrets.randbelow(2**31),
        reports_dir=opt("reports_dir"),
    )


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """Give every xdist worker the controller's run id."""
    node.workerinput["mochaos_run_id"] = node.config.mochaos.run_id


def _new_run_id() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def run_config(config: pytest.Config) -> RunConfig:
    """The parsed mo-chaos options of this run."""
    return config.mochaos  # type: ignore[attr-defined,no-any-return]


# -- fixtures -----------------------------------------------------------------


@pytest.fixture(scope="session")
def mochaos(pytestconfig: pytest.Config) -> RunConfig:
    """The run's parsed mo-chaos options."""
    return run_config(pytestconfig)


@pytest.fixture(scope="session")
def cluster(mochaos: RunConfig) -> Cluster:
    """A running cluster from the chosen provider (built and started on first use)."""
    provider = make_provider(
        mochaos.cluster,
        kubeconfig=mochaos.kubeconfig,
        context=mochaos.context,
        allow_contexts=mochaos.allow_contexts,
        keep_cluster=mochaos.keep_cluster,
    )
    started = provider.up()
    runstate.reap(_delete_namespace_quietly)
    return started


@pytest.fixture(scope="session")
def kube(cluster: Cluster) -> Iterator:
    """A kubernetes ApiClient bound to the cluster (user agent mochaos/test)."""
    api = new_api_client(cluster.kubeconfig, user_agent="mochaos/test", context=cluster.context)
    check_reachable(api)
    yield api
    api.close()


@pytest.fixture
def namespace(request: pytest.FixtureRequest, kube, cluster: Cluster, mochaos: RunConfig):
    """A fresh namespace labelled with the run id; deleted after the test."""
    from kubernetes import client

    name = _namespace_name(request.node.name)
    core = client.CoreV1Api(kube)
    body = {"metadata": {"name": name, "labels": {RUN_ID_LABEL: mochaos.run_id}}}
    core.create_namespace(body)
    runstate.register_namespace(name, cluster.kubeconfig)
    _wait_default_service_account(core, name)
    yield name
    try:
        core.delete_namespace(name, propagation_policy="Background")
    finally:
        runstate.unregister_namespace(name)


@pytest.fixture(scope="session")
def operator_target(mochaos: RunConfig, cluster: Cluster) -> OperatorTarget:
    """The ``--operator`` target, installed once for the session."""
    from chaos.operator import parse_target

    target = parse_target(mochaos.operator, time_scale=mochaos.time_scale)
    target.install(cluster)
    return target


@pytest.fixture
def operator(
    operator_target: OperatorTarget, cluster: Cluster, namespace: str, tmp_path: Path
) -> Iterator[RunningOperator]:
    """The operator target started for this test's namespace; stopped afterwards."""
    running = operator_target.start(cluster, namespace, tmp_path)
    yield running
    running.stop()


def _namespace_name(test_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    prefix = f"mc-{worker}-" if worker else "mc-"
    suffix = "-" + secrets.token_hex(2)
    return (prefix + slug)[: 63 - len(suffix)].rstrip("-") + suffix


def _wait_default_service_account(core, namespace: str, timeout: float = 20.0) -> None:
    """Pods are refused until the controller-manager created the default ServiceAccount."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        accounts = core.list_namespaced_service_account(namespace).items
        if any(a.metadata.name == "default" for a in accounts):
            return
        time.sleep(0.05)
    raise InfraError(
        f"namespace {namespace}: no default ServiceAccount after {timeout:.0f}s",
        hint="kube-controller-manager is not working; check the cluster's logs",
    )


def _delete_namespace_quietly(namespace: str, kubeconfig: Path) -> None:
    from kubernetes import client

    api = new_api_client(kubeconfig, user_agent="mochaos/reaper")
    try:
        client.CoreV1Api(api).delete_namespace(namespace, _request_timeout=5)
    except client.ApiException as err:
        if err.status != 404:
            raise
    finally:
        api.close()


# -- error classification -----------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Report infrastructure and usage errors as errors with their one-line reason."""
    report = yield
    if call.excinfo is not None and isinstance(call.excinfo.value, MochaosError):
        err = call.excinfo.value
        kind = "usage error" if isinstance(err, UsageError) else "infrastructure error"
        report.longrepr = f"mo-chaos {kind}: {err}"
        if call.when == "call":
            # An infrastructure failure is never an operator verdict: show it as an error.
            report.when = "setup"  # type: ignore[misc]
    return report
