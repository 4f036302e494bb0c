"""Benchmark (issue 22): the kind path's builds, cluster, memory and scenarios on this machine.

``images``: the offline node image, OpenKruise's manager image and MatrixOne's image built
cold (a temporary, empty Go build cache and mo-chaos cache; the module cache is kept) and
warm (Go's build cache warm, mo-chaos's cache empty), each in a child process.
``cluster``: ``kind create`` of a private cluster, the images loaded and the operator's
chart installed, then the cluster deleted. ``seed``: the seed scenario on kind and on the
embedded cluster (one run each: the ratio), with the memory of the kind scenario's namespace
sampled while it runs. ``parallel``: the scalein family on kind with N workers (verdicts,
wall time, the node's peak memory). Run: ``python bench/run.py kind --help``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import figures

from mochaos.errors import UsageError
from mochaos.operator.targets.source import ENV_SOURCE
from mochaos.report.child_pytest import run_pytest
from mochaos.suites import SEED

REPO = figures.REPO
PYTHON = sys.executable
NODE = "mochaos-control-plane"
MAIN = "2301e3b"
BENCH_CLUSTER = "mochaos-bench"


def _timed(argv: Sequence[str], *, env: dict[str, str], log: Path) -> float:
    """Run ``argv`` to completion (output into ``log``); its wall-clock seconds."""
    t0 = time.monotonic()
    with log.open("ab") as fh:
        proc = subprocess.run(argv, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(argv[:4])} failed (exit {proc.returncode}); see {log}")
    return time.monotonic() - t0


def _build_env(tmp: Path, *, cold: bool) -> dict[str, str]:
    env = dict(os.environ, MOCHAOS_CACHE=str(tmp / "cache"))
    env.setdefault("GONOSUMDB", "github.com/matrixorigin")
    if cold:
        env["GOCACHE"] = str(tmp / "gocache")
    return env


BUILDS = {
    "node image": [PYTHON, "-m", "mochaos", "kind", "node-image", "--force"],
    "OpenKruise image": [
        PYTHON, "-c",
        "from mochaos.images.operator_images import kruise_image;"
        "from mochaos.tooling.docker_cli import DockerCli;"
        "import subprocess;"
        "subprocess.run(['docker','image','rm','openkruise/kruise-manager:v1.4.0'],"
        "capture_output=True);"
        "kruise_image('v1.4.0', docker=DockerCli.find(), progress=print)",
    ],
    "MatrixOne image": [
        PYTHON, "-c",
        "from mochaos.images.matrixone import build_archive;"
        "build_archive('1.2.3', progress=print)",
    ],
}  # fmt: skip
"""Each build, run with a fresh mo-chaos cache (so nothing of ours is reused)."""


def images(args: Any) -> dict[str, Any]:
    """Cold and warm seconds of each image build."""
    out: dict[str, Any] = {}
    for name, argv in BUILDS.items():
        if args.only and name not in args.only:
            continue
        out[name] = {}
        for how in ("cold", "warm"):
            with tempfile.TemporaryDirectory(dir=args.tmp_dir) as tmp:
                env = _build_env(Path(tmp), cold=how == "cold")
                log = args.log_dir / f"images-{name.replace(' ', '-')}-{how}.log"
                print(f"bench: {name} {how} …", flush=True)
                out[name][how] = round(_timed(argv, env=env, log=log), 1)
                print(f"bench: {name} {how}: {out[name][how]} s", flush=True)
    return out


def _kind(*args: str, env: dict[str, str], log: Path) -> float:
    return _timed([PYTHON, "-m", "mochaos", "kind", *args], env=env, log=log)


def cluster(args: Any) -> dict[str, Any]:
    """``kind create`` of a private cluster, images loaded and chart installed, deletion."""
    env = dict(os.environ, MOCHAOS_STATE=str(args.log_dir / "state"))
    log = args.log_dir / "cluster.log"
    code = (
        "from mochaos.cluster.kind.kind_provider import KindProvider;"
        "from mochaos.operator import parse_target;"
        "import time, sys; p = KindProvider(name=sys.argv[1], keep_cluster=True); c = p.up();"
        "t = parse_target(sys.argv[2], {'cluster': 'kind'}); t0 = time.monotonic();"
        "[p.load_image(r) for r in t.images]; t1 = time.monotonic(); t.install(c);"
        "t2 = time.monotonic(); t.close();"
        "print('FIGURES', t1 - t0, t2 - t1, flush=True)"
    )
    target = f"source:{args.source}@{MAIN}"
    t0 = time.monotonic()
    subprocess.run([PYTHON, "-m", "mochaos", "kind", "engine", "status"], env=env, check=False)
    with log.open("ab") as fh:
        proc = subprocess.run([PYTHON, "-c", code, BENCH_CLUSTER, target], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=fh, text=True)  # fmt: skip
    total = time.monotonic() - t0
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("FIGURES")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"bench: cluster step failed; see {log}")
    loads, install = (float(x) for x in line.split()[1:])
    t1 = time.monotonic()
    subprocess.run(["kind", "delete", "cluster", "--name", BENCH_CLUSTER], env=env,
                   capture_output=True, check=False)  # fmt: skip
    return {
        "kind create (to Ready nodes)": round(total - loads - install, 1),
        "image loads": round(loads, 1),
        "chart install to ready": round(install, 1),
        "kind delete": round(time.monotonic() - t1, 1),
    }


class NamespaceMemory:
    """Samples the working set of every container of the test namespaces on the node."""

    def __init__(self, node: str, interval: float = 5.0) -> None:
        self.node = node
        self.interval = interval
        self.samples: dict[str, list[int]] = {}
        self.node_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> NamespaceMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            out = subprocess.run(["docker", "exec", self.node, "crictl", "stats", "-o", "json"],
                                 capture_output=True, text=True)  # fmt: skip
            if out.returncode != 0:
                continue
            per_ns: dict[str, int] = {}
            for stat in json.loads(out.stdout).get("stats", []):
                ns = stat["attributes"]["labels"].get("io.kubernetes.pod.namespace", "")
                if ns.startswith("mc-"):
                    used = int(stat.get("memory", {}).get("workingSetBytes", {}).get("value", 0))
                    per_ns[ns] = per_ns.get(ns, 0) + used
            for ns, used in per_ns.items():
                self.samples.setdefault(ns, []).append(used)
            stats = subprocess.run(
                ["docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", self.node],
                capture_output=True, text=True,
            ).stdout  # fmt: skip
            self.node_peak = max(self.node_peak, _bytes(stats.split("/")[0].strip()))

    def peak_mib(self) -> dict[str, float]:
        """Each namespace's peak working set, MiB."""
        return {ns: round(max(v) / 2**20) for ns, v in self.samples.items()}


def _bytes(text: str) -> int:
    units = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "B": 1}
    for unit, factor in units.items():
        if text.endswith(unit):
            return int(float(text.removesuffix(unit)) * factor)
    return 0


def _suite(extra: Sequence[str], *, keyword: str, workers: int, reports: Path,
           log: Path) -> tuple[float, list[dict[str, Any]]]:  # fmt: skip
    args = ["suites", "-k", keyword, "-n", str(workers), "-p", "no:cacheprovider",
            "--mochaos-reports-dir", str(reports), *extra]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.setdefault("GONOSUMDB", "github.com/matrixorigin")
    child = run_pytest(args, reports_dir=reports, cwd=REPO, env=env, python=PYTHON, log=log)
    if child.summary is None:
        why = f"{child.why_no_summary} (pytest exit {child.exit_code})"
        raise SystemExit(f"bench: {why}; see {log}")
    return child.seconds, child.summary["tests"]


def _verdict(result: dict[str, Any]) -> str:
    failed = sorted(v["invariant"] for v in result["verdicts"] if v["status"] == "fail")
    return f"{result['outcome']}: {', '.join(failed) or '-'}"


def seed(args: Any) -> dict[str, Any]:
    """The seed scenario on kind (memory sampled) and on the embedded cluster, one run each."""
    target = ["--operator", f"source:{args.source}@{MAIN}"]
    kind_args = [*target, "--mochaos-cluster=kind", "--mochaos-keep-cluster"]
    with NamespaceMemory(NODE) as memory:
        kind_wall, (kind_result,) = _suite(
            kind_args, keyword=SEED, workers=0, reports=args.log_dir / "seed-kind",
            log=args.log_dir / "seed-kind.log",
        )  # fmt: skip
    local_wall, (local_result,) = _suite(
        target, keyword=SEED, workers=0, reports=args.log_dir / "seed-local",
        log=args.log_dir / "seed-local.log",
    )  # fmt: skip
    return {
        "kind": {"verdict": _verdict(kind_result), "scenario s": round(kind_result["duration"]),
                 "wall s": round(kind_wall), "retries": kind_result["max_finalize_retries"]},
        "embedded": {"verdict": _verdict(local_result),
                     "scenario s": round(local_result["duration"]), "wall s": round(local_wall),
                     "retries": local_result["max_finalize_retries"]},
        "kind/embedded scenario": round(kind_result["duration"] / local_result["duration"], 2),
        "kind/embedded wall": round(kind_wall / local_wall, 2),
        "namespace peak MiB": memory.peak_mib(),
        "node peak MiB": round(memory.node_peak / 2**20),
    }  # fmt: skip


def parallel(args: Any) -> dict[str, Any]:
    """The scalein family on kind with ``--workers`` workers: verdicts, wall, memory."""
    extra = ["--operator", f"source:{args.source}@{MAIN}", "--mochaos-cluster=kind",
             "--mochaos-keep-cluster"]  # fmt: skip
    with NamespaceMemory(NODE) as memory:
        wall, results = _suite(
            extra, keyword="scalein_during_migration", workers=args.workers,
            reports=args.log_dir / f"parallel-{args.workers}",
            log=args.log_dir / f"parallel-{args.workers}.log",
        )  # fmt: skip
    return {
        "workers": args.workers,
        "wall s": round(wall),
        "scenarios": {r["nodeid"].split("::")[-1]: _verdict(r) for r in results},
        "namespace peak MiB": memory.peak_mib(),
        "node peak MiB": round(memory.node_peak / 2**20),
    }


STEPS = {"images": images, "cluster": cluster, "seed": seed, "parallel": parallel}


def main(argv: Sequence[str] | None) -> int:
    """Run the chosen steps, print their figures, write them as JSON."""
    parser = figures.Parser(prog="python bench/run.py kind", description=__doc__.splitlines()[0])
    parser.add_argument("steps", nargs="+", choices=sorted(STEPS))
    parser.add_argument("--only", action="append", help="images: only this build (repeatable)")
    parser.add_argument("--workers", type=int, default=2, help="parallel: xdist workers")
    parser.add_argument("--tmp-dir", type=Path, default=None, help="where cold caches go")
    parser.add_argument("--out", type=Path, default=figures.DEFAULT_OUT)
    args = parser.parse_args(argv)
    args.source = os.environ.get(ENV_SOURCE)
    if args.source is None and set(args.steps) - {"images"}:
        raise UsageError(f"{ENV_SOURCE} is unset", hint="point it at an operator checkout")
    args.log_dir = Path(tempfile.mkdtemp(prefix="bench-kind-"))
    print(f"bench: logs in {args.log_dir}", flush=True)
    result: dict[str, Any] = {"machine": figures.machine()}
    for step in args.steps:
        result[step] = STEPS[step](args)
        print(json.dumps({step: result[step]}, indent=2), flush=True)
    result["machine_after"] = figures.machine()
    path = figures.write_figures("kind", result, out=args.out)
    print(f"bench: figures in {path}")
    shutil.rmtree(args.log_dir / "state", ignore_errors=True)
    return 0


if __name__ == "__main__":
    figures.run(main)
