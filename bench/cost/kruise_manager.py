"""Benchmark (issue 21): kruise-manager on the local cluster — build, start, footprint.

On a private local cluster (``--name``), with kruise-manager provided as a real target
provides it: the time from its start to ``/readyz`` 200 and to its CloneSet workers
running (``--restarts`` times: stopped by pid while held, started again by the supervisor
with the same command), its RSS and CPU while a CloneSet of ``--pods`` kwok pods is
scaled up and down, then idle over ``--idle`` seconds. ``--build`` also runs the recipe
(:func:`mochaos.kruise.kruise_build.kruise_manager`) twice in a child process with an empty
temporary mo-chaos cache: first with an empty temporary GOCACHE (cold; the Go module
cache is kept), then with that GOCACHE (warm), recording each wall time and the largest
child's peak RSS. Run: ``python bench/run.py kruise_manager --help``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import figures
from kubernetes import client

from mochaos.cluster import environment, events
from mochaos.cluster.environment import Environment
from mochaos.cluster.local import doubles_host
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.errors import InfraError, UsageError
from mochaos.kruise import manager, module
from mochaos.kube import new_api_client
from mochaos.procs import cpu_seconds

CHILD_BUILD = """
import json, resource, sys, time
from mochaos.kruise import build
t0 = time.monotonic()
build.kruise_manager(sys.argv[1], progress=lambda line: print(line, file=sys.stderr))
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"seconds": time.monotonic() - t0, "peak_rss_mib": peak}))
"""


def time_builds(version: str, tmp: Path) -> dict[str, Any]:
    """The recipe cold (empty GOCACHE) then warm (that GOCACHE), each into an empty cache."""
    out: dict[str, Any] = {}
    gocache = tmp / "gocache"
    for kind in ("cold", "warm"):
        env = {**os.environ, "MOCHAOS_CACHE": str(tmp / f"cache-{kind}"), "GOCACHE": str(gocache)}
        print(f"bench: {kind} build of kruise-manager {version} …", file=sys.stderr, flush=True)
        proc = subprocess.run(
            [sys.executable, "-c", CHILD_BUILD, version], env=env, capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise InfraError(f"{kind} build failed: {proc.stderr.strip()[-300:]}")
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        out[f"build_{kind}_s"] = got["seconds"]
        out[f"build_{kind}_peak_rss_mib"] = got["peak_rss_mib"]
    out["binary_mib"] = (tmp / "cache-warm" / "bin" / f"kruise-{version}" / module.BINARY).stat(
    ).st_size / 2**20  # fmt: skip
    return out


def _pid(provider: LocalProvider, version: str) -> int | None:
    return doubles_host.running(manager.spec(version), provider.supervision)


def time_restarts(provider: LocalProvider, version: str, n: int) -> dict[str, Any]:
    """Seconds from a restart (the supervisor's event) to /readyz 200 and to CloneSet
    workers in its log."""
    spec = manager.spec(version)
    ctx = doubles_host.context(spec, cluster_name=provider.cluster_name,
                               cluster_dir=provider.cluster_dir)  # fmt: skip
    ready, workers = [], []
    for _ in range(n):
        pid = _pid(provider, version)
        if pid is None:
            raise InfraError("kruise-manager is not running")
        seen = len(_restarts(provider))
        provider.supervision.hold(spec.name)
        os.kill(pid, signal.SIGTERM)
        while _pid(provider, version) == pid:
            time.sleep(0.05)
        lines_before = len(ctx.log_path.read_text(errors="replace").splitlines())
        provider.supervision.release(spec.name)  # the supervisor starts it again
        got_ready = got_workers = None
        deadline = time.monotonic() + 120
        while got_ready is None or got_workers is None:
            if time.monotonic() > deadline:
                raise InfraError("kruise-manager not ready within 120 s", hint=str(ctx.log_path))
            if got_ready is None and spec.health(ctx) is None:
                got_ready = time.time()
            if got_workers is None:
                new = ctx.log_path.read_text(errors="replace").splitlines()[lines_before:]
                if any("cloneset-controller" in ln and "Starting workers" in ln for ln in new):
                    got_workers = time.time()
            time.sleep(0.05)
        started = _restarts(provider)[seen].t
        ready.append(got_ready - started)
        workers.append(got_workers - started)
    return {"ready_s": ready, "workers_s": workers}


def _restarts(provider: LocalProvider) -> list[events.ClusterEvent]:
    return [e for e in events.read(provider.events_log())
            if e.component == manager.NAME and e.event == "restarted"]  # fmt: skip


def footprint(provider: LocalProvider, version: str, pods: int, idle: float) -> dict[str, Any]:
    """RSS and CPU while a CloneSet of ``pods`` pods is scaled up and down, then idle."""
    pid = _pid(provider, version)
    assert pid is not None
    kube = new_api_client(provider.kubeconfig_path(), user_agent="mochaos/bench")
    core, custom = client.CoreV1Api(kube), client.CustomObjectsApi(kube)
    ns = "bench-kruise"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        rss_idle = figures.rss_mib(pid)
        cpu0, t0 = cpu_seconds(pid), time.monotonic()
        body = {
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "cs"},
            "spec": {"replicas": pods, "selector": {"matchLabels": {"app": "cs"}},
                     "template": {"metadata": {"labels": {"app": "cs"}},
                                  "spec": {"containers": [{"name": "c", "image": "mo:1"}]}}},
        }  # fmt: skip
        custom.create_namespaced_custom_object("apps.kruise.io", "v1alpha1", ns, "clonesets", body)
        _wait_ready(custom, ns, pods)
        rss_busy = figures.rss_mib(pid)
        custom.patch_namespaced_custom_object(
            "apps.kruise.io", "v1alpha1", ns, "clonesets", "cs", {"spec": {"replicas": 0}}
        )
        _wait_ready(custom, ns, 0)
        busy_cpu, busy_s = cpu_seconds(pid) - cpu0, time.monotonic() - t0
        cpu1 = cpu_seconds(pid)
        time.sleep(idle)
        idle_cpu = (cpu_seconds(pid) - cpu1) / idle
    finally:
        core.delete_namespace(ns)
        kube.close()
    return {
        "rss_idle_mib": rss_idle, "rss_with_pods_mib": rss_busy, "scale_cpu_s": busy_cpu,
        "scale_wall_s": busy_s, "idle_cpu_cores": idle_cpu,
    }  # fmt: skip


def _wait_ready(custom: client.CustomObjectsApi, ns: str, n: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = custom.get_namespaced_custom_object(
            "apps.kruise.io", "v1alpha1", ns, "clonesets", "cs"
        ).get("status", {})
        if status.get("replicas") == n and status.get("readyReplicas", 0) == n:
            return
        time.sleep(0.2)
    raise InfraError(f"the CloneSet did not reach {n} ready pods within 120 s")


def main(argv: Sequence[str] | None = None) -> int:
    p = figures.Parser(prog="python bench/run.py kruise_manager", description=__doc__)
    p.add_argument("--name", default="mochaos-bench-kruise", help="private cluster name")
    p.add_argument("--version", default=module.DEFAULT_VERSION, help="OpenKruise version")
    p.add_argument("--restarts", type=int, default=3, help="timed restarts (default 3)")
    p.add_argument("--pods", type=int, default=10, help="CloneSet pods (default 10)")
    p.add_argument("--idle", type=float, default=30.0, help="seconds of idle CPU sampling")
    p.add_argument("--build", action="store_true", help="also time a cold and a warm build")
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT)
    args = p.parse_args(argv)
    if args.name == "mochaos":
        raise UsageError("--name mochaos is the shared cluster", hint="use a private name")
    result: dict[str, Any] = {"machine": figures.machine(), "version": args.version}
    if args.build:
        with tempfile.TemporaryDirectory(prefix="mo-kruise-bench-") as tmp:
            result.update(time_builds(args.version, Path(tmp)))
    provider = LocalProvider(name=args.name)
    try:
        cluster = provider.up()
        t0 = time.monotonic()
        environment.provide(cluster, Environment(kruise=args.version))
        result["provide_s"] = time.monotonic() - t0
        result.update(time_restarts(provider, args.version, args.restarts))
        result.update(footprint(provider, args.version, args.pods, args.idle))
    finally:
        provider.down()
    rows = [
        ["provided on a running cluster", figures.fmt(result["provide_s"], " s")],
        ["start to /readyz 200 (median)", figures.fmt(figures.median(result["ready_s"]), " s")],
        ["start to CloneSet workers (median)",
         figures.fmt(figures.median(result["workers_s"]), " s")],
        ["RSS idle", figures.fmt(result["rss_idle_mib"], " MiB", 1)],
        [f"RSS with {args.pods} pods", figures.fmt(result["rss_with_pods_mib"], " MiB", 1)],
        [f"CPU to scale 0 -> {args.pods} -> 0",
         figures.fmt(result["scale_cpu_s"], " s") + f" in {result['scale_wall_s']:.1f} s"],
        ["idle CPU", figures.fmt(result["idle_cpu_cores"], " cores", 4)],
    ]  # fmt: skip
    if "build_cold_s" in result:
        rows += [
            ["cold build (empty GOCACHE)", figures.fmt(result["build_cold_s"], " s", 0)],
            ["warm build (same GOCACHE)", figures.fmt(result["build_warm_s"], " s", 1)],
            ["cold / warm", figures.fmt(
                figures.ratio(result["build_cold_s"], result["build_warm_s"]), "x", 1)],
            ["peak RSS, cold build", figures.fmt(result["build_cold_peak_rss_mib"], " MiB", 0)],
            ["binary size", figures.fmt(result["binary_mib"], " MiB", 1)],
        ]  # fmt: skip
    print(figures.table(["figure", "value"], rows))
    print(f"figures: {figures.write_figures('kruise_manager', result, out=args.out)}")
    return 0


if __name__ == "__main__":
    figures.run(main)
