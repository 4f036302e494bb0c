"""The fixtures the plugin hands to tests: the run's settings, the cluster, a test
namespace, the operator under test, its recorder and a scenario.

``mochaos`` (the run's settings), ``cluster_provider``, ``cluster``, ``kube``,
``namespace``, ``operator_target``, ``operator``, ``recorder``, ``scenario``; the plugin
(:mod:`mochaos.plugin`) exposes them. The ``scenario`` fixture owns the scenario's end: it
stashes the scenario on the test's node, which the plugin concludes when the test's body
returns or raises; its teardown writes the test's folder (:mod:`mochaos.scenario_reports`).
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mochaos import namespaces, progress, runstate
from mochaos.cluster import ClusterProvider
from mochaos.cluster import make_provider as provider_named
from mochaos.config import RunConfig, run_config
from mochaos.errors import MochaosError
from mochaos.kube import Cluster, check_reachable, new_api_client
from mochaos.operator import parse_target
from mochaos.operator.target import OperatorTarget, RunningOperator
from mochaos.operator.webhooks.host import orphaned_webhooks
from mochaos.scenario_reports import (
    SCENARIO,
    add_findings,
    test_folder,
    test_id,
    write_folder,
)

RUNNING_OPERATOR = pytest.StashKey[RunningOperator]()
"""On a test's node: the operator its ``operator`` fixture started, which the namespace's
teardown stops."""


@pytest.fixture(scope="session")
def mochaos(pytestconfig: pytest.Config) -> RunConfig:
    """The run's checked mo-chaos settings."""
    return run_config(pytestconfig)


@pytest.fixture(scope="session")
def cluster_provider(mochaos: RunConfig) -> Iterator[ClusterProvider]:
    """The ``--mochaos-cluster`` provider; a kind cluster is removed at the end unless kept
    (by the controller after a run with workers: :func:`remove_kind_after_workers`)."""
    provider = make_provider(mochaos)
    yield provider
    # The local cluster stays up for the next run (warm start); xdist workers share
    # clusters, so only a single-process run may remove a kind cluster.
    if mochaos.cluster == "kind" and os.environ.get("PYTEST_XDIST_WORKER") is None:
        provider.down()


@pytest.fixture(scope="session")
def cluster(cluster_provider: ClusterProvider) -> Cluster:
    """A running cluster from the chosen provider (built and started on first use)."""
    from mochaos.report.testreport import (  # lazy: light plugin load; pulls the invariants
        write_killed,
    )

    with progress.phase("cluster"):
        started = cluster_provider.up()
        for line in runstate.reap(namespaces.reap, write_killed):
            progress.announce(line)
        for line in orphaned_webhooks(started):
            progress.announce(line)
    return started


@pytest.fixture(scope="session")
def kube(cluster: Cluster) -> Iterator[Any]:
    """A kubernetes ApiClient bound to the cluster (user agent mochaos/test)."""
    api = new_api_client(cluster.kubeconfig, user_agent="mochaos/test", context=cluster.context)
    check_reachable(api)
    yield api
    api.close()


@pytest.fixture
def namespace(request: pytest.FixtureRequest, kube: Any, cluster: Cluster, mochaos: RunConfig):
    """A fresh namespace labelled with the run id — for a test of an operator target that
    makes namespaces ready ahead, one of those — deleted after the test, and what had to be
    cleaned up by force reported with the test's result."""
    name = _warm_namespace(request)
    if name is None:
        name = namespace_name(request.node.name)
        namespaces.create(kube, name, run_id=mochaos.run_id)
    # A scenario's result gets the findings, even when a later run finishes the teardown.
    report = test_folder(request.node, mochaos) if "scenario" in request.fixturenames else None
    runstate.register_namespace(name, cluster.kubeconfig, cluster.context, report=report)
    yield name
    running = request.node.stash.get(RUNNING_OPERATOR, None)
    try:
        if running is None:
            findings = namespaces.teardown(kube, name)
        else:
            findings = namespaces.teardown(
                kube, name, stop=running.stop, wait=running.waits.teardown
            )
    finally:
        runstate.unregister_namespace(name)
    add_findings(request.node, [str(f) for f in findings])


def _warm_namespace(request: pytest.FixtureRequest) -> str | None:
    """A namespace the test's operator target made ready ahead (``OperatorTarget.warm``),
    when the test runs an operator and the target keeps some."""
    if "operator" not in request.fixturenames:
        return None
    warm = getattr(request.getfixturevalue("operator_target"), "warm", None)
    if warm is None:
        return None
    with progress.phase("operator start: a namespace made ready ahead"):
        return warm.take()


@pytest.fixture(scope="session")
def operator_target(
    mochaos: RunConfig, cluster: Cluster, cluster_provider: ClusterProvider
) -> Iterator[OperatorTarget]:
    """The ``--operator`` target: its images loaded, installed once for the session."""
    target = parse_target(mochaos.operator, mochaos.target_options())
    with progress.phase("operator install"):
        for ref in target.images:
            cluster_provider.load_image(ref)
        target.install(cluster)
    yield target
    target.close()


@pytest.fixture
def operator(
    request: pytest.FixtureRequest,
    operator_target: OperatorTarget,
    cluster: Cluster,
    namespace: str,
    tmp_path: Path,
) -> RunningOperator:
    """The operator target started for this test's namespace. The namespace's teardown
    stops it (:func:`mochaos.namespaces.teardown`): the namespace is deleted while the
    operator still runs, so that it finalizes its own objects; only then is it stopped.
    """
    with progress.phase("operator start"):
        running = operator_target.start(cluster, namespace, tmp_path)
    request.node.stash[RUNNING_OPERATOR] = running
    return running


@pytest.fixture
def recorder(
    request: pytest.FixtureRequest, cluster: Cluster, namespace: str, mochaos: RunConfig
) -> Iterator[Any]:
    """The namespace's recorder (watches claims, sets, pools, pods, events, the apiserver's
    availability, the cluster's restarts, the local cluster's doubles), streaming the
    history into the test's report folder as it records."""
    from mochaos.observe.recorder import Recorder  # lazy: light plugin load; pulls the recorder
    from mochaos.report.artifacts import (  # lazy: light plugin load; pulls the invariants
        HISTORY_FILE,
    )

    api = new_api_client(cluster.kubeconfig, user_agent="mochaos/recorder", context=cluster.context)
    folder = test_folder(request.node, mochaos)
    rec = Recorder(api, namespace=namespace, stream_to=folder / HISTORY_FILE)
    rec.start()
    rec.watch_availability()
    if cluster.events_log is not None:
        rec.follow_cluster(cluster.events_log)
    if cluster.provider == "local":
        from mochaos.cluster.local.local_provider import (  # lazy: light plugin load; heavy
            LocalProvider,
        )

        rec.watch_dependencies(LocalProvider(name=cluster.name).dependency_checks())
    yield rec
    rec.stop()
    api.close()


@pytest.fixture
def scenario(
    request: pytest.FixtureRequest,
    cluster: Cluster,
    namespace: str,
    operator: RunningOperator,
    recorder: Any,
    mochaos: RunConfig,
) -> Iterator[Any]:
    """A chaos scenario bound to this test's namespace, recorder and operator. It is
    concluded when the test's body returns (settle, epilogue, verdict: whichever the test
    did not run) or raises; its reports are written whatever the outcome."""
    from mochaos.scenario._checker import (  # lazy: light plugin load; pulls the scenario engine
        RunInfo,
    )
    from mochaos.scenario._engine import (  # lazy: light plugin load; pulls the scenario engine
        Scenario,
    )

    recorder.follow_operator(operator)
    if operator.interposer is not None:
        recorder.follow_interposer(operator.interposer.journal)
    # An operator run as a local process (model, binary:, source:) is watched for SIGSTOP.
    recorder.watch_freezes(lambda: getattr(operator, "pid", None))
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
        cluster, namespace=namespace, recorder=recorder, operator=operator, run=run,
        nodeid=test_id(request.node),
    )  # fmt: skip
    request.node.stash[SCENARIO] = sc
    # Until the test's teardown writes its result, one says it was killed before its end.
    killed = sc.checker.result(nodeid=sc.nodeid, outcome="error", phase="killed",
                               message="the run was killed before this test ended")  # fmt: skip
    runstate.keep_result(namespace, killed.to_dict())
    yield sc
    sc.close()
    recorder.stop()
    write_folder(request.node, sc, cluster, mochaos)


def remove_kind_after_workers(cfg: RunConfig, provider: ClusterProvider | None = None) -> None:
    """After a run with xdist workers on kind, in the controller: remove the kind cluster the
    workers shared (unless ``--mochaos-keep-cluster``), as a single-process run's
    ``cluster_provider`` fixture does; no worker may, since the others still use it.
    Failing to remove it is said in one line, not an error of the run's verdicts."""
    if cfg.cluster != "kind":
        return
    try:
        (provider or make_provider(cfg)).down()
    except MochaosError as err:
        progress.announce(f"the kind cluster the workers used was not removed: {err}")


def make_provider(cfg: RunConfig) -> ClusterProvider:
    """The ``--mochaos-cluster`` provider for the run's settings (no connection yet)."""
    return provider_named(
        cfg.cluster,
        kubeconfig=cfg.kubeconfig,
        context=cfg.context,
        allow_contexts=cfg.allow_context,
        keep_cluster=cfg.keep_cluster,
        registry=cfg.registry,
    )


def namespace_name(test_name: str) -> str:
    """A DNS-safe namespace name for a test: ``mc-[<worker>-]<slug>-<random>``."""
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    prefix = f"mc-{worker}-" if worker else "mc-"
    suffix = "-" + secrets.token_hex(2)
    return (prefix + slug)[: 63 - len(suffix)].rstrip("-") + suffix
