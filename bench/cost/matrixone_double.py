"""Benchmark (issue 14): the MatrixOne double's memory, CPU and start latency per namespace,
and how long its binary takes to build cold and warm.

Starts the double against the local cluster, then adds ``--namespaces`` namespaces one at
a time, each with a LogSet, a TN pod and ``--cns`` CN pods, and measures for each the time
from the LogSet's creation until HAKeeper lists every store, and the double's RSS once it
has settled; then its CPU while idle. ``--build`` also times a build with an empty Go build
cache (cold) and a rebuild after a source change (warm).
Run: ``python bench/run.py matrixone_double --help``.
"""

from __future__ import annotations

import os
import shutil
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

from mochaos import namespaces
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.doubles import DoubleContext
from mochaos.doubles.matrixone import SPEC, crds
from mochaos.doubles.matrixone import build as module
from mochaos.doubles.matrixone.client import ControlClient
from mochaos.errors import InfraError
from mochaos.kube import new_api_client
from mochaos.procs import cpu_seconds

GROUP, VERSION = "core.matrixorigin.io", "v1alpha1"


def make_namespace(kube, name: str, cns: int, run_id: str) -> float:
    """Create a namespace with a LogSet, a TN pod and CN pods; return the LogSet's time."""
    core = client.CoreV1Api(kube)
    core.create_namespace({"metadata": {"name": name, "labels": {RUN_ID_LABEL: run_id}}})
    for _ in range(200):
        if any(
            a.metadata.name == "default" for a in core.list_namespaced_service_account(name).items
        ):
            break
        time.sleep(0.05)

    def pod(pod_name: str, component: str, instance: str) -> dict[str, Any]:
        return {
            "metadata": {"name": pod_name, "labels": {"matrixorigin.io/component": component,
                                                      "matrixorigin.io/instance": instance}},
            "spec": {"subdomain": f"{instance}-headless",
                     "containers": [{"name": "main", "image": "matrixorigin/matrixone:1.2.3"}]},
        }  # fmt: skip

    core.create_namespaced_pod(name, pod("mo-tn-0", "DNSet", "mo"))
    for i in range(cns):
        core.create_namespaced_pod(name, pod(f"cn-{i}", "CNSet", "cn"))
    t0 = time.monotonic()
    client.CustomObjectsApi(kube).create_namespaced_custom_object(
        GROUP, VERSION, name, "logsets",
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "LogSet", "metadata": {"name": "mo"},
         "spec": {"replicas": 1, "volume": {"size": "1Gi"},
                  "sharedStorage": {"fileSystem": {"path": "/data"}}}},
    )  # fmt: skip
    return t0


def wait_stores(mo: ControlClient, namespace: str, cns: int, timeout: float = 120) -> None:
    """Wait until HAKeeper lists ``cns`` CN stores and the TN store."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if mo.clusters().get(namespace, {}).get("state") == "running":
            stores = mo.stores(namespace)
            if len(stores.cn) == cns and stores.tn:
                return
        time.sleep(0.05)
    raise InfraError(f"namespace {namespace}: stores not registered in {timeout:.0f}s")


def measure_namespaces(
    args: Any, kube, proc: subprocess.Popen[bytes], mo: ControlClient
) -> dict[str, Any]:
    run_id = f"bench-{os.getpid()}"
    names = [f"mo-bench-{os.getpid()}-{i}" for i in range(args.namespaces)]
    rows: list[dict[str, float]] = []
    base = figures.rss_mib(proc.pid)
    try:
        for name in names:
            t0 = make_namespace(kube, name, args.cns, run_id)
            wait_stores(mo, name, args.cns)
            ready = time.monotonic() - t0
            time.sleep(args.settle)
            rows.append({"ready_s": ready, "rss_mib": figures.rss_mib(proc.pid)})
        c0, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(args.idle)
        idle_cpu = (cpu_seconds(proc.pid) - c0) / (time.monotonic() - t0)
    finally:
        for name in names:
            try:
                namespaces.delete(kube, name, grace=namespaces.TEARDOWN_GRACE)
            except Exception as err:  # best effort: report and go on
                print(f"bench: could not delete {name}: {err}", file=sys.stderr)
    growth = [
        b["rss_mib"] - a for a, b in zip([base, *(r["rss_mib"] for r in rows)], rows, strict=False)
    ]
    return {
        "rss_base_mib": base,
        "namespaces": rows,
        "rss_per_namespace_mib": figures.median(growth[1:] or growth),
        "rss_first_namespace_mib": growth[0] if growth else None,
        "ready_median_s": figures.median([r["ready_s"] for r in rows]),
        "idle_cpu_cores": idle_cpu,
    }


def time_builds(tmp: Path) -> dict[str, float]:
    """Seconds of a cold build (empty GOCACHE, module cache kept) and a warm rebuild."""
    go = shutil.which("go")
    if go is None:
        raise InfraError("go not found", hint="install Go >= 1.26")
    work = tmp / "module"
    work.mkdir()
    module.prepare_module(work, module.pinned_version(), None)
    env = {**os.environ, **module.build_env(), "CGO_ENABLED": "0", "GOWORK": "off",
           "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod",
           "GOCACHE": str(tmp / "gocache")}  # fmt: skip
    out = str(tmp / "matrixone-double")
    times = {}
    for kind in ("cold", "warm"):
        if kind == "warm":
            main = work / "main.go"
            main.write_text(main.read_text() + "\n// touched by the benchmark\n")
        t0 = time.monotonic()
        subprocess.run([go, "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "."],
                       cwd=work, env=env, check=True)  # fmt: skip
        times[f"build_{kind}_s"] = time.monotonic() - t0
    return times


def main(argv: Sequence[str] | None = None) -> int:
    p = figures.Parser(prog="python bench/run.py matrixone_double", description=__doc__)
    p.add_argument("--namespaces", type=int, default=4, help="namespaces to add (default 4)")
    p.add_argument("--cns", type=int, default=3, help="CN pods per namespace (default 3)")
    p.add_argument("--settle", type=float, default=3.0, help="seconds before reading RSS")
    p.add_argument("--idle", type=float, default=10.0, help="seconds of idle CPU sampling")
    p.add_argument("--build", action="store_true", help="also time a cold and a warm build")
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT)
    p.add_argument("extra", nargs="*", help="extra flags for the double (after --)")
    args = p.parse_args(argv)

    cluster = LocalProvider().up()
    binary = module.binary()
    kube = new_api_client(cluster.kubeconfig, user_agent="mochaos/bench")
    crds.ensure(kube)
    result: dict[str, Any] = {
        "machine": figures.machine(),
        "binary_mib": binary.stat().st_size / 2**20,
    }
    with tempfile.TemporaryDirectory(prefix="mo-double-bench-") as tmp:
        ctx = DoubleContext(
            cluster.name, Path(cluster.kubeconfig), Path(tmp) / "state", Path(tmp) / "log"
        )
        ctx.state_dir.mkdir()
        argv_ = [*SPEC.command(ctx), *args.extra]
        with ctx.log_path.open("ab") as log:
            proc = subprocess.Popen(
                argv_, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            t0 = time.monotonic()
            while SPEC.health(ctx) is not None:
                if proc.poll() is not None or time.monotonic() - t0 > 30:
                    raise InfraError("the double did not become healthy", hint=str(ctx.log_path))
                time.sleep(0.05)
            result["healthy_after_s"] = time.monotonic() - t0
            result.update(
                measure_namespaces(args, kube, proc, ControlClient.from_state_dir(ctx.state_dir))
            )
        finally:
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        if args.build:
            result.update(time_builds(Path(tmp)))
    kube.close()
    rows = [
        ["double healthy after start", figures.fmt(result["healthy_after_s"], " s")],
        ["RSS with no namespace", figures.fmt(result["rss_base_mib"], " MiB", 1)],
        [
            "RSS added by the first namespace",
            figures.fmt(result["rss_first_namespace_mib"], " MiB", 1),
        ],
        [
            "RSS added per further namespace",
            figures.fmt(result["rss_per_namespace_mib"], " MiB", 1),
        ],
        [
            f"LogSet -> {args.cns} CNs + TN in HAKeeper (median)",
            figures.fmt(result["ready_median_s"], " s"),
        ],
        [
            f"idle CPU with {args.namespaces} namespaces",
            figures.fmt(result["idle_cpu_cores"], " cores", 3),
        ],
        ["binary size", figures.fmt(result["binary_mib"], " MiB", 1)],
    ]
    if "build_cold_s" in result:
        rows.append(["cold build (empty GOCACHE)", figures.fmt(result["build_cold_s"], " s", 0)])
        rows.append(
            ["warm rebuild (one file changed)", figures.fmt(result["build_warm_s"], " s", 1)]
        )
        rows.append(
            [
                "cold / warm",
                figures.fmt(figures.ratio(result["build_cold_s"], result["build_warm_s"]), "x", 1),
            ]
        )
    print(figures.table(["figure", "value"], rows))
    print(f"figures: {figures.write_figures('matrixone_double', result, out=args.out)}")
    return 0


if __name__ == "__main__":
    figures.run(main)
