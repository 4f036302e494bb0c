"""The pytest plugin: options, fixtures, markers and report hooks — thin by design.

Fixtures: ``cluster`` (session), ``kube`` (session API client), ``namespace``
(fresh, labelled with the run id, deleted after the test), ``operator_target``
(session: installed once), ``operator`` (started per test namespace). Everything
else lives in the layers; this module only wires them to pytest.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mochaos import runstate
from mochaos.cleanup import delete_namespace
from mochaos.cluster import PROVIDERS, make_provider
from mochaos.errors import InfraError, MochaosError, UsageError
from mochaos.invariants.options import (
    FINALIZE_TIMEOUT,
    MIGRATION_TIMEOUT,
    RETRY_BUDGET,
    TIME_SCALE,
    run_options,
)
from mochaos.kube import check_reachable, new_api_client
from mochaos.types import (
    RUN_ID_LABEL,
    CheckOptions,
    Cluster,
    ClusterProvider,
    OperatorTarget,
    RunningOperator,
)


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
    image_options: dict[str, object]

    def check_options(self) -> CheckOptions:
        """Invariant thresholds in wall seconds (operator-time values scaled)."""
        return run_options(
            time_scale=self.time_scale,
            finalize_timeout=self.finalize_timeout,
            retry_budget=self.retry_budget,
            migration_timeout=self.migration_timeout,
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
        default=TIME_SCALE,
        help="multiply the model's operator intervals and our thresholds (default 1.0)",
    )
    g.addoption(
        "--finalize-timeout",
        type=float,
        default=FINALIZE_TIMEOUT,
        help="seconds a deleting CNClaim may take (operator time, default 60)",
    )
    g.addoption(
        "--retry-budget",
        type=int,
        default=RETRY_BUDGET,
        help="finalize retries allowed per claim in the finalize window (default 10)",
    )
    g.addoption(
        "--migration-timeout",
        type=float,
        default=MIGRATION_TIMEOUT,
        help="seconds a migration may take to end (operator time, default 120)",
    )
    g.addoption(
        "--chaos-seed",
        type=int,
        default=None,
        help="seed for every random choice (printed on failure to replay a run)",
    )
    g.addoption(
        "--reports-dir",
        type=Path,
        default=Path("reports"),
        help="root of the run reports (default: reports/)",
    )
    g.addoption(
        "--mo-image",
        default=None,
        help="image: targets: MatrixOne image for the pool (default matrixone:1.2.3)",
    )
    g.addoption(
        "--minio",
        default="auto",
        choices=("auto", "docker", "in-cluster"),
        help="image: targets: where MatrixOne's object storage runs (default auto)",
    )
    g.addoption("--chart-repo", default=None, help="image: targets: Helm repository URL")
    g.addoption("--chart-version", default=None, help="image: targets: chart version")
    g.addoption(
        "--chart-path",
        type=Path,
        default=None,
        help="image: targets: a local chart directory instead of the repository",
    )


_INTERRUPTED = threading.Event()
"""Set by Ctrl-C. A library may swallow the KeyboardInterrupt (the kubernetes client's
pydantic-core validators, built on each API method's first call, drop one raised while
they build), so the plugin raises it again at the end of the test phase."""


def _on_sigint(signum: int, frame: object) -> None:
    _INTERRUPTED.set()
    raise KeyboardInterrupt


def _honour_interrupt() -> None:
    if _INTERRUPTED.is_set():
        raise KeyboardInterrupt


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item):
    """Stop the session after a Ctrl-C a library swallowed during setup."""
    try:
        return (yield)
    finally:
        _honour_interrupt()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """Stop the session after a Ctrl-C a library swallowed during the test."""
    try:
        return (yield)
    finally:
        _honour_interrupt()


def pytest_configure(config: pytest.Config) -> None:
    """Parse options once (usage errors stop the run) and register markers."""
    config.addinivalue_line("markers", "scenario: a chaos scenario against an operator target")
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)
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
        image_options={
            "mo_image": opt("mo_image"),
            "minio": opt("minio"),
            "chart_repo": opt("chart_repo"),
            "chart_version": opt("chart_version"),
            "chart_path": opt("chart_path"),
            "run_id": run_id,
        },
    )


def _is_controller(config: pytest.Config) -> bool:
    return getattr(config, "workerinput", None) is None


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller merges every test's result into the run's summary.json."""
    if not _is_controller(session.config):
        return
    from mochaos.report.summary import merge_summary

    cfg = run_config(session.config)
    run_dir = cfg.reports_dir / cfg.run_id
    if run_dir.is_dir():
        merge_summary(run_dir, meta=_summary_meta(run_dir, cfg))


def _summary_meta(run_dir: Path, cfg: RunConfig) -> dict[str, str]:
    from mochaos.report.summary import read_results

    first = next(iter(read_results(run_dir)), {})
    return {
        "operator_target": cfg.operator,
        "operator_version": first.get("operator_version", ""),
        "cluster_provider": cfg.cluster,
        "k8s_version": first.get("k8s_version", ""),
        "seed": str(cfg.chaos_seed),
    }


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """One line per scenario: outcome, failed invariants, max finalize retries, timeline."""
    from mochaos.report.summary import read_results, terminal_line
    from mochaos.types import ScenarioResult

    cfg = run_config(config)
    run_dir = cfg.reports_dir / cfg.run_id
    results = read_results(run_dir) if run_dir.is_dir() else []
    if not results:
        return
    terminalreporter.section("mo-chaos verdicts")
    for data in results:
        result = ScenarioResult.from_dict(data)
        timeline = result.artifacts.get("timeline_md")
        terminalreporter.write_line(terminal_line(result, Path(timeline) if timeline else None))
    terminalreporter.write_line(f"reports: {run_dir} (seed {cfg.chaos_seed})")


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
def cluster_provider(mochaos: RunConfig) -> Iterator[ClusterProvider]:
    """The ``--cluster`` provider; a kind cluster is removed at the end unless kept."""
    provider = make_provider(
        mochaos.cluster,
        kubeconfig=mochaos.kubeconfig,
        context=mochaos.context,
        allow_contexts=mochaos.allow_contexts,
        keep_cluster=mochaos.keep_cluster,
    )
    yield provider
    # The local cluster stays up for the next run (warm start); xdist workers share
    # clusters, so only a single-process run may remove a kind cluster.
    if mochaos.cluster == "kind" and os.environ.get("PYTEST_XDIST_WORKER") is None:
        provider.down()


@pytest.fixture(scope="session")
def cluster(cluster_provider: ClusterProvider, pytestconfig: pytest.Config) -> Cluster:
    """A running cluster from the chosen provider (built and started on first use).

    Output capture is lifted meanwhile, so a first build's progress shows live.
    """
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        started = cluster_provider.up()
        for line in runstate.reap(_delete_namespace_quietly):
            print(f"mo-chaos: {line}", file=sys.stderr)
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
    runstate.register_namespace(name, cluster.kubeconfig, cluster.context)
    _wait_default_service_account(core, name)
    yield name
    try:
        delete_namespace(kube, name)
    finally:
        runstate.unregister_namespace(name)


@pytest.fixture(scope="session")
def operator_target(
    mochaos: RunConfig, cluster: Cluster, cluster_provider: ClusterProvider
) -> Iterator[OperatorTarget]:
    """The ``--operator`` target: its images loaded, installed once for the session."""
    from mochaos.operator import parse_target

    target = parse_target(
        mochaos.operator, time_scale=mochaos.time_scale, image_options=mochaos.image_options
    )
    for ref in getattr(target, "images", ()):
        cluster_provider.load_image(ref)
    target.install(cluster)
    yield target
    close = getattr(target, "close", None)
    if close is not None:
        close()


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


def _delete_namespace_quietly(namespace: str, kubeconfig: Path, context: str | None) -> None:
    api = new_api_client(kubeconfig, user_agent="mochaos/reaper", context=context)
    try:
        delete_namespace(api, namespace)
    finally:
        api.close()


# -- error classification -----------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Classify outcomes: infrastructure/usage errors are errors, missed faults inconclusive."""
    from mochaos.errors import Inconclusive

    report = yield
    exc = call.excinfo.value if call.excinfo is not None else None
    if isinstance(exc, MochaosError):
        kind = "usage error" if isinstance(exc, UsageError) else "infrastructure error"
        report.longrepr = f"mo-chaos {kind}: {exc}"
        if call.when == "call":
            # An infrastructure failure is never an operator verdict: show it as an error.
            report.when = "setup"  # type: ignore[misc]
    elif isinstance(exc, Inconclusive):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"INCONCLUSIVE: {exc}")
    if call.when == "call":
        item.mochaos_call = (report, exc)  # type: ignore[attr-defined]
    elif call.when == "setup" and report.failed and "scenario" in item.fixturenames:
        _write_setup_error(item, report)
    return report


def _write_setup_error(item: pytest.Item, report: pytest.TestReport) -> None:
    """A scenario that never started still gets a result (outcome error) in the run."""
    from mochaos.report.rundir import create_run_dir, test_dir
    from mochaos.report.summary import write_result
    from mochaos.types import ScenarioResult

    cfg = run_config(item.config)
    result = ScenarioResult(
        nodeid=item.nodeid,
        outcome="error",
        operator_target=cfg.operator,
        cluster_provider=cfg.cluster,
        seed=cfg.chaos_seed,
        message=str(report.longrepr).strip().splitlines()[-1][:500] if report.longrepr else "",
    )
    write_result(test_dir(create_run_dir(cfg.reports_dir, cfg.run_id), item.nodeid), result)


# -- scenarios ----------------------------------------------------------------------


@pytest.fixture
def recorder(cluster: Cluster, namespace: str) -> Iterator:
    """The namespace's recorder (watches claims, sets, pools, pods, events)."""
    from mochaos.observe.recorder import Recorder

    api = new_api_client(cluster.kubeconfig, user_agent="mochaos/recorder", context=cluster.context)
    rec = Recorder(api, namespace=namespace)
    rec.start()
    yield rec
    rec.stop()
    api.close()


@pytest.fixture
def scenario(
    request: pytest.FixtureRequest,
    cluster: Cluster,
    namespace: str,
    operator: RunningOperator,
    recorder,
    mochaos: RunConfig,
) -> Iterator:
    """A chaos scenario bound to this test's namespace, recorder and operator."""
    from mochaos.scenario.engine import RunInfo, Scenario

    recorder.follow_operator(operator)
    api = new_api_client(cluster.kubeconfig, user_agent="mochaos/chaos", context=cluster.context)
    agent_api = new_api_client(
        cluster.kubeconfig, user_agent="mochaos/agent", context=cluster.context
    )
    run = RunInfo(
        run_id=mochaos.run_id,
        seed=mochaos.chaos_seed,
        options=mochaos.check_options(),
        operator_target=operator.target,
        operator_version=operator.version,
        cluster_provider=cluster.provider,
        k8s_version=cluster.version,
        audit_log=cluster.audit_log,
    )
    sc = Scenario(
        api,
        agent_api=agent_api,
        namespace=namespace,
        recorder=recorder,
        operator=operator,
        run=run,
        nodeid=request.node.nodeid,
        on_result=lambda result: _attach_result(request.node, result),
    )
    request.node.mochaos_scenario = sc
    yield sc
    sc.close()
    recorder.stop()
    api.close()
    agent_api.close()
    _write_reports(request.node, sc, cluster, namespace, mochaos)


def _write_reports(item: pytest.Item, sc, cluster: Cluster, namespace: str, cfg: RunConfig) -> None:
    """Write history, timeline, artifacts and result.json into the test's report folder."""
    from mochaos.report.artifacts import write_artifacts, write_timeline
    from mochaos.report.rundir import create_run_dir, test_dir
    from mochaos.report.summary import write_result
    from mochaos.types import ScenarioResult

    result = sc.result
    if result is None:
        call, exc = getattr(item, "mochaos_call", (None, None))
        result = ScenarioResult(
            nodeid=item.nodeid,
            outcome=_outcome_of(call, exc),
            operator_target=sc.run.operator_target,
            operator_version=sc.run.operator_version,
            cluster_provider=sc.run.cluster_provider,
            k8s_version=sc.run.k8s_version,
            seed=sc.run.seed,
            message=_longrepr_text(call),
        )
    folder = test_dir(create_run_dir(cfg.reports_dir, cfg.run_id), item.nodeid)
    history = sc.recorder.history()
    operator_log = getattr(sc.operator, "log_path", None)
    meta = {
        "operator": f"{result.operator_target} ({result.operator_version})",
        "cluster": f"{result.cluster_provider} {result.k8s_version}",
        "outcome": result.outcome,
        "seed": str(result.seed),
        "namespace": namespace,
    }
    result.artifacts.update(write_timeline(folder, history, result.verdicts,
                                           title=item.nodeid, meta=meta))  # fmt: skip
    result.artifacts.update(
        write_artifacts(
            folder, history, result.verdicts, operator_log=operator_log,
            audit_log=cluster.audit_log, namespace=namespace,
            failed=result.outcome != "passed",
        )
    )  # fmt: skip
    write_result(folder, result)


def _longrepr_text(call: pytest.TestReport | None) -> str:
    if call is None or not call.longrepr:
        return ""
    if isinstance(call.longrepr, tuple):  # a skip: (path, line, reason)
        return str(call.longrepr[2])
    return str(call.longrepr)[:2000]


def _outcome_of(call: pytest.TestReport | None, exc: BaseException | None) -> str:
    from mochaos.errors import Inconclusive

    if call is None or isinstance(exc, MochaosError):
        return "error"
    if isinstance(exc, Inconclusive):
        return "inconclusive"
    return {"passed": "passed", "failed": "failed"}.get(call.outcome, "error")


def _attach_result(item: pytest.Item, result) -> None:
    from mochaos.report.junit import junit_properties

    item.user_properties.extend(junit_properties(result))
    item.mochaos_result = result  # type: ignore[attr-defined]
