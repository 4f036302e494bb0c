"""One trial: a namespace's LogSet, DNSet and CN pool as the operator renders them, run in Docker.

MinIO (:class:`~mochaos.matrixone.storage.DockerMinio`) joins the trial's network;
our topology templates (``mochaos/manifests/matrixone``, the sizes of
:class:`~mochaos.matrixone.topology.Topology`) go through the operator's renderer;
every pod starts at once, as the operator's sets would once their dependencies are Ready;
then the trial waits for SQL on a CN, holds sessions there with
:class:`~mochaos.matrixone.sessions.SqlSessions` and reads them back from ``show
processlist``, and measures each process's resident memory. It is what tests and
``bench/builds/matrixone_image.py`` run; it needs Docker and a matrixone-operator checkout.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mochaos.errors import InfraError
from mochaos.images import matrixone
from mochaos.matrixone.sessions import CLIENT_ADDR, SqlSessions, tcp
from mochaos.matrixone.storage import DockerMinio, minio_secret
from mochaos.matrixone.topology import Topology, render_topology
from mochaos.operator.provenance.checkout import Checkout
from mochaos.procs import cpu_seconds, rss_bytes
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.waiting import wait_for

from trial.docker_pods import DockerPods
from trial.pods import plan_pods
from trial.render import render, renderer

NAMESPACE = "mo-trial"
SQL_TIMEOUT = 300.0
"""All pods started -> a CN answers SQL (HAKeeper bootstrap, TN, CN registration)."""
REGISTER_TIMEOUT = 120.0
"""SQL answered -> the CN's store in HAKeeper's cluster details (its processlist non-empty)."""
SETTLE = 20.0
"""Seconds of idling before resident memory is read."""
HELD = 3


@dataclass
class TrialResult:
    """What one trial measured."""

    image: str
    pods: list[str]
    time_to_sql: float
    time_to_processlist: float = 0.0
    """All pods started -> ``show processlist`` on the CN lists sessions (its store known)."""
    rss: dict[str, int] = field(default_factory=dict)
    """Resident memory of each pod's process, in bytes, after ``SETTLE`` seconds idle."""
    idle_cpu: dict[str, float] = field(default_factory=dict)
    """CPU each pod's process used over those ``SETTLE`` seconds, in cores."""
    sessions_held: int = 0
    """Our sessions ``show processlist`` listed while we held ``HELD``."""
    sessions_from_proxy: int = 0
    """Of those, how many the CN took as coming from its proxy (``proxy_host`` set: what
    the operator's session count reads as ``FromProxy``)."""
    sessions_after_release: int = 0
    listed: list[dict[str, object]] = field(default_factory=list)
    """``show processlist`` while the sessions were held (every row, for the evidence)."""


def run_trial(
    *,
    checkout: Checkout,
    docker: DockerCli,
    workdir: Path,
    logs: Path,
    version: str = matrixone.DEFAULT_VERSION,
    topology: Topology | None = None,
    progress: Progress = say,
    clock: Callable[[], float] = time.monotonic,
) -> TrialResult:
    """Run the trial and clean up after it (containers, network, files); when it fails,
    the pods' output is left in ``logs``."""
    topology = topology or Topology()
    image = matrixone.ensure_image(version, docker, progress=progress)
    binary = renderer(checkout, progress=progress)
    pods = DockerPods(docker, name=f"{int(time.time())}", workdir=workdir, progress=progress)
    ips = pods.create_network()
    minio = DockerMinio(network=pods.network, docker=docker, progress=progress)
    try:
        store = minio.up()
        docs = render_topology(
            namespace=NAMESPACE,
            run_id="trial",
            mo_image=image,
            mo_version=version,
            store=store,
            topology=topology,
        )
        objects = render(binary, [d for d in docs if d["kind"] != "Secret"])
        secret = minio_secret(namespace=NAMESPACE, store=store, run_id="trial")
        plan = plan_pods(
            objects,
            namespace=NAMESPACE,
            ips=ips,
            secrets={secret["metadata"]["name"]: secret["stringData"]},
        )
        progress(f"trial: starting {len(plan)} pods ({', '.join(p.name for p in plan)})")
        t0 = clock()
        for pod in plan:
            pods.start(pod)
        cns = [p for p in plan if p.kind == "CloneSet"]
        if not cns:
            raise InfraError("trial: the rendered pool has no CN pod", hint="check maxIdle")
        cn = cns[0]
        sessions = SqlSessions(tcp(cn.ip, matrixone.SQL_PORT), progress=progress)
        wait_for(
            lambda: _answers(sessions, cn.name),
            what=f"SQL on CN {cn.name}",
            timeout=SQL_TIMEOUT,
            interval=0.5,
            hint=f"docker logs {pods.containers[cn.name][:12]}",
        )
        result = TrialResult(image, [p.name for p in plan], clock() - t0)
        progress(f"trial: SQL on {cn.name} after {result.time_to_sql:.1f} s")
        # Its sessions are listed through the query services of the CNs HAKeeper knows:
        # until this CN's store is there, the list is empty, even of the asking session.
        wait_for(
            lambda: _lists_itself(sessions, cn.name),
            what=f"show processlist on {cn.name}",
            timeout=REGISTER_TIMEOUT,
            interval=0.5,
        )
        result.time_to_processlist = clock() - t0
        _sessions(sessions, cn.name, result)
        pids = {p.name: pods.pid(p.name) for p in plan}
        before, t1 = {pod: cpu_seconds(pid) for pod, pid in pids.items()}, clock()
        time.sleep(SETTLE)
        spent = clock() - t1
        result.rss = {pod: rss_bytes(pid) or 0 for pod, pid in pids.items()}
        result.idle_cpu = {
            pod: (cpu_seconds(pid) - before[pod]) / spent for pod, pid in pids.items()
        }
        return result
    except BaseException:
        pods.save_logs(logs)
        progress(f"trial failed: the pods' output is in {logs}")
        raise
    finally:
        pods.close_containers()
        minio.down()
        pods.close()


def _answers(sessions: SqlSessions, pod: str) -> tuple[bool, str]:
    try:
        _, rows = sessions.query(pod, "select 1")
    except InfraError as err:
        return False, err.what
    return rows == [(1,)], f"select 1 -> {rows}"


def _lists_itself(sessions: SqlSessions, pod: str) -> tuple[bool, str]:
    listed = _listed(sessions, pod)
    return bool(listed), f"{len(listed)} sessions listed"


def _listed(sessions: SqlSessions, pod: str) -> list[dict[str, object]]:
    columns, rows = sessions.query(pod, "show processlist")
    return [dict(zip(columns, row, strict=True)) for row in rows]


def _ours(listed: list[dict[str, object]]) -> list[dict[str, object]]:
    """The sessions listed as ours (client address ``CLIENT_ADDR``, which only the proxy's
    preamble sets), the observing one left out."""
    return [
        r
        for r in listed
        if r.get("client_host") == CLIENT_ADDR
        and not str(r.get("info") or "").startswith("show processlist")
    ]


def _sessions(sessions: SqlSessions, pod: str, result: TrialResult) -> None:
    sessions.hold(pod, HELD)
    result.listed = _listed(sessions, pod)
    held = _ours(result.listed)
    result.sessions_held = len(held)
    result.sessions_from_proxy = sum(1 for r in held if r.get("proxy_host"))
    sessions.release(pod)
    for _ in itertools.repeat(None, 20):
        result.sessions_after_release = len(_ours(_listed(sessions, pod)))
        if result.sessions_after_release == 0:
            break
        time.sleep(0.5)
