"""Benchmark (issue 22): the MatrixOne image built from source, and MatrixOne run from it.

``--download``: MatrixOne's module and every dependency into an empty temporary
``GOMODCACHE`` (what a first build fetches from the proxy), timed and sized. ``--build``:
the image's recipe into an empty temporary ``MOCHAOS_CACHE`` twice, wall and CPU time:
first with an empty temporary ``GOCACHE`` (cold: every package compiled, the Debian base
made), then with the Go cache and the base it left (warm: the image entry alone removed),
each step timed from the recipe's progress lines; the module cache stays the shared one,
so neither counts the download. ``--trial``: one namespace's pods as the operator renders
them, run in Docker (needs ``MOCHAOS_OPERATOR_SRC`` and an engine): time to SQL, to the
CN's store being listed, and each process's resident memory, with ``--cns`` CN pods.
Without options, all three. Run: ``python bench/run.py matrixone_image --help``.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import figures

from mochaos.doubles.matrixone.build import build_env as nosumdb_env
from mochaos.errors import UsageError
from mochaos.images import matrixone
from mochaos.matrixone.topology import Topology
from mochaos.operator.provenance.checkout import resolve
from mochaos.tooling.docker_cli import DockerCli

MIB = 2**20
LAB = Path(__file__).resolve().parents[2] / "lab"
"""The lab's experiments (lab/, beside the package): the trial below runs ``lab/trial``."""
STEP = re.compile(r"\[(\d+)/\d+\] (.+?)( …| done in \S+)$")


class StepClock:
    """Progress lines in, seconds per step out (from a step's ``…`` to its ``done``)."""

    def __init__(self) -> None:
        self.started: dict[str, float] = {}
        self.seconds: dict[str, float] = {}
        self.t0 = time.monotonic()

    def __call__(self, line: str) -> None:
        print(f"{time.monotonic() - self.t0:8.1f}  {line}", flush=True)
        m = STEP.search(line)
        if m and m[3] == " …":
            self.started[m[2]] = time.monotonic()
        elif m and m[2] in self.started:
            self.seconds[m[2]] = round(time.monotonic() - self.started[m[2]], 1)


def _children_cpu() -> float:
    """CPU seconds (user + system) of every finished child process, theirs included."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _du(path: Path) -> int:
    out = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def download(version: str, tmp: Path) -> dict[str, Any]:
    """The module and its dependencies into an empty module cache."""
    env = {
        **os.environ,
        **nosumdb_env(),
        "GOMODCACHE": str(tmp / "gomodcache"),
        "GOFLAGS": "-mod=readonly",
        "GOTOOLCHAIN": "local",
    }
    t0 = time.monotonic()
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{matrixone.MODULE}@v{version}"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    module = time.monotonic() - t0
    source = json.loads(out)["Dir"]
    subprocess.run(["go", "-C", source, "mod", "download"], env=env, check=True)
    total = time.monotonic() - t0
    size = _du(tmp / "gomodcache" / "cache" / "download")
    subprocess.run(["go", "clean", "-modcache"], env=env, check=True)
    return {"module_s": round(module, 1), "all_s": round(total, 1), "download_mib": size // MIB}


def build(version: str, tmp: Path) -> dict[str, Any]:
    """A cold build, then a warm one, of the image's recipe in a cache of their own."""
    saved = {k: os.environ.get(k) for k in ("MOCHAOS_CACHE", "GOCACHE")}
    os.environ["MOCHAOS_CACHE"] = str(tmp / "mochaos-cache")
    os.environ["GOCACHE"] = str(tmp / "gocache")
    try:
        runs = {}
        for kind in ("cold", "warm"):
            clock = StepClock()
            t0 = time.monotonic()
            archive = matrixone.build_archive(version, progress=clock)
            runs[kind] = {
                "total_s": round(time.monotonic() - t0, 1),
                "steps_s": clock.seconds,
                "archive_mib": archive.stat().st_size // MIB,
            }
            shutil.rmtree(archive.parent)
            archive.parent.with_name(archive.parent.name + ".lock").unlink(missing_ok=True)
        runs["gocache_mib"] = _du(tmp / "gocache") // MIB
        return runs
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        subprocess.run(["chmod", "-R", "u+w", str(tmp)], check=False)


def trial(version: str, cns: int, tmp: Path) -> dict[str, Any]:
    """One namespace in Docker, as the operator renders it."""
    sys.path.insert(0, str(LAB))
    from trial.run import run_trial

    source = os.environ.get("MOCHAOS_OPERATOR_SRC")
    if not source:
        raise UsageError("--trial needs MOCHAOS_OPERATOR_SRC", hint="point it at a checkout")
    docker = DockerCli.find()
    clock = StepClock()
    result = run_trial(
        checkout=resolve(Path(source), "2301e3b"),
        docker=docker,
        workdir=tmp / "pods",
        logs=tmp / "logs",
        version=version,
        progress=clock,
        topology=Topology(max_idle=cns, max_pods=max(cns, Topology().max_pods)),
    )
    size = docker.inspect_image(result.image, "{{.Size}}")
    return {
        "pods": result.pods,
        "time_to_sql_s": round(result.time_to_sql, 1),
        "time_to_processlist_s": round(result.time_to_processlist, 1),
        "rss_mib": {pod: round(v / MIB) for pod, v in result.rss.items()},
        "namespace_rss_mib": round(sum(result.rss.values()) / MIB),
        "idle_cpu_cores": {pod: round(v, 3) for pod, v in result.idle_cpu.items()},
        "namespace_idle_cpu_cores": round(sum(result.idle_cpu.values()), 3),
        "sessions_held": result.sessions_held,
        "sessions_from_proxy": result.sessions_from_proxy,
        "sessions_after_release": result.sessions_after_release,
        "image_mib": int(size) // MIB,
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = figures.Parser(prog="python bench/run.py matrixone_image", description=__doc__)
    p.add_argument("--version", default=matrixone.DEFAULT_VERSION)
    p.add_argument("--download", action="store_true")
    p.add_argument("--build", action="store_true")
    p.add_argument("--trial", action="store_true")
    p.add_argument("--cns", type=int, default=2, help="CN pods in the trial's pool")
    p.add_argument("--tmp-dir", type=Path, default=None)
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT)
    args = p.parse_args(argv)
    every = not (args.download or args.build or args.trial)
    result: dict[str, Any] = {"machine": figures.machine(), "version": args.version}
    with tempfile.TemporaryDirectory(dir=args.tmp_dir, prefix="mochaos-bench-") as tmp:
        if every or args.download:
            result["download"] = download(args.version, Path(tmp) / "download")
        if every or args.build:
            result["build"] = build(args.version, Path(tmp) / "build")
        if every or args.trial:
            result["trial"] = trial(args.version, args.cns, Path(tmp) / "trial")
    result["machine_after"] = figures.machine()
    print(json.dumps(result, indent=1))
    print(f"figures: {figures.write_figures('matrixone_image', result, out=args.out)}")
    return 0


if __name__ == "__main__":
    figures.run(main)
