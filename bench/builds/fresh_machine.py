"""Benchmark (issue 24): the README's main job on a fresh machine that downloads no binaries.

Runs ``pytest suites/ -k scalein_during_migration`` as the README writes it, in a child with
an empty ``MOCHAOS_CACHE``, an empty ``GOCACHE`` (Go's build cache), its own
``MOCHAOS_STATE`` (so a cluster of its own is started, then removed) and
``MOCHAOS_BINARIES=build``; Go's module cache stays warm unless ``--cold-modules`` (then the
modules are fetched from the module proxy too). Prints what it built and how long each
component took, the cluster's start and the CPU seconds its build used (nearly the same whatever
else the machine runs; over the cores, a floor of its wall time on an idle machine), the
job, the whole and the machine's load average while it ran; with ``--lanes 1,2`` once per
``MOCHAOS_BUILD_LANES`` value, for their ratio. Everything is in ``--tmp-dir`` and removed.
Needs ~6 GB free there (``--cold-modules``: ~10 GB). Takes 10-20 minutes per run on 2 cores.
Run: ``python bench/run.py fresh_machine --help``.
"""

from __future__ import annotations

import os
import re
import resource
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

from mochaos.errors import InfraError
from mochaos.procs import TICKS, stat_fields
from mochaos.report.child_pytest import pytest_command

ROOT = Path(__file__).resolve().parents[2]
DONE = re.compile(
    r"mo-chaos[^:]*: (?P<name>[\w-]+) (?P<version>v\S+) done in (?:(?P<m>\d+)m)?(?P<s>\d+)s"
)
BUILDING = re.compile(r"mo-chaos[^:]*: building (?P<what>.+?) with go")
"""Progress lines as the terminal shows them (``mo-chaos [gw0]: …`` from an xdist worker)."""
READY = re.compile(r"mo-chaos[^:]*: cluster \S+ ready in (?P<s>[\d.]+)s")
"""Only the live line: pytest's report of a failed test repeats the captured log lines
(``INFO mochaos:progress.py:… cluster … ready in …``) after the job, and the first
cluster-ready line is the one that ends the build."""
LOAD_EVERY = 15.0
"""Seconds between two samples of the load average."""


def seconds_of(match: re.Match[str]) -> float:
    """A ``done in 1m05s`` match in seconds."""
    return int(match["m"] or 0) * 60 + int(match["s"])


def children_cpu() -> float:
    """CPU seconds of this process's ended children (and their waited descendants)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of process ``root`` and its descendants, the ended ones
    their parents waited for included (``/proc/<pid>/stat``: utime, stime, cutime, cstime):
    what a build consumed, whatever else the machine runs meanwhile."""
    stats: dict[int, tuple[int, float]] = {}
    for pid in (int(d.name) for d in Path("/proc").glob("[0-9]*")):
        fields = stat_fields(pid)
        if fields is not None:  # None: gone meanwhile
            ticks = sum(int(f) for f in fields[11:15])
            stats[pid] = (int(fields[1]), ticks / TICKS)
    tree, seconds = {root}, 0.0
    for _ in range(64):  # descend level by level
        more = {pid for pid, (ppid, _) in stats.items() if ppid in tree} - tree
        if not more:
            break
        tree |= more
    for pid in tree:
        seconds += stats.get(pid, (0, 0.0))[1]
    return seconds


class LoadSampler:
    """The machine's 1-minute load average, sampled every :data:`LOAD_EVERY` seconds."""

    def __init__(self) -> None:
        self._samples = [os.getloadavg()[0]]
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(LOAD_EVERY):
            self._samples.append(os.getloadavg()[0])

    def stop(self) -> dict[str, float]:
        """Stop sampling; mean, min and max of the samples."""
        self._done.set()
        self._thread.join()
        self._samples.append(os.getloadavg()[0])
        xs = self._samples
        return {"mean": sum(xs) / len(xs), "min": min(xs), "max": max(xs)}


def fresh_run(*, lanes: int, tmp_dir: Path | None, cold_modules: bool) -> dict[str, Any]:
    """One fresh-machine run of the main job with ``lanes`` build lanes; its figures."""
    root = Path(tempfile.mkdtemp(prefix="mochaos-fresh-", dir=tmp_dir))
    env = dict(os.environ)
    env |= {
        "MOCHAOS_CACHE": str(root / "cache"),
        "MOCHAOS_STATE": str(root / "state"),
        "GOCACHE": str(root / "gocache"),
        "MOCHAOS_BINARIES": "build",
        "MOCHAOS_BUILD_LANES": str(lanes),
    }
    if cold_modules:
        env["GOMODCACHE"] = str(root / "gomodcache")
    # Its output is read line by line as it comes (what is built when): a Popen of its own.
    cmd = pytest_command(["suites/", "-k", "scalein_during_migration", "-p", "no:cacheprovider",
                          "--mochaos-reports-dir", str(root / "reports")])  # fmt: skip
    print(f"bench: lanes {lanes}: $ {' '.join(cmd[2:])} (in {root})", file=sys.stderr, flush=True)
    load = LoadSampler()
    cpu0 = children_cpu()
    t0 = time.monotonic()
    built: dict[str, float] = {}
    what, cluster_ready, build_cpu, job_start = "", None, None, None
    try:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)  # fmt: skip
        assert proc.stdout is not None
        with (root.parent / f"{root.name}.log").open("w") as log:
            for line in proc.stdout:
                log.write(line)
                if m := BUILDING.search(line):
                    what = m["what"]
                elif m := DONE.search(line):
                    built[m["name"]] = seconds_of(m)
                elif cluster_ready is None and READY.search(line):
                    cluster_ready = time.monotonic() - t0
                    build_cpu = tree_cpu(proc.pid)
                    job_start = time.monotonic()
        rc = proc.wait()
        end = time.monotonic()
        total, total_cpu = end - t0, children_cpu() - cpu0
    finally:
        subprocess.run(
            [sys.executable, "-m", "mochaos", "cluster", "down"], cwd=ROOT, env=env,
            capture_output=True, check=False,
        )  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)
    if not built:
        raise InfraError(f"the fresh run built nothing (exit {rc})", hint=f"see {root}.log")
    return {
        "lanes": lanes, "built": what, "components": built, "exit": rc, "total": total,
        "build": cluster_ready, "build_cpu": build_cpu, "total_cpu": total_cpu,
        "job": None if job_start is None else end - job_start,
        "cold_modules": cold_modules,
        "loadavg": load.stop(),
    }  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Run once per lane count; print the figures and the ratio."""
    p = figures.Parser(prog="python bench/run.py fresh_machine", description=__doc__)
    p.add_argument("--lanes", default="2", help="comma-separated MOCHAOS_BUILD_LANES values")
    p.add_argument("--cold-modules", action="store_true", help="an empty GOMODCACHE as well")
    p.add_argument("--tmp-dir", type=Path, default=None)
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT)
    args = p.parse_args(argv)
    runs = [
        fresh_run(lanes=int(n), tmp_dir=args.tmp_dir, cold_modules=args.cold_modules)
        for n in args.lanes.split(",")
    ]
    rows = []
    for r in runs:
        parts = ", ".join(f"{k} {v:.0f}s" for k, v in r["components"].items())
        times = [figures.fmt(r[k], "s", 0) for k in ("build", "build_cpu", "job", "total")]
        rows.append([str(r["lanes"]), *times, parts, str(r["exit"])])
    print(figures.table(
        ["lanes", "to cluster ready", "its CPU", "job", "total", "built", "exit"], rows
    ))  # fmt: skip
    for r in runs:
        if r["build_cpu"] is not None:
            floor = r["build_cpu"] / (os.cpu_count() or 1)
            print(f"lanes {r['lanes']}: the build used {r['build_cpu']:.0f} CPU-s: on "
                  f"{os.cpu_count()} idle cores it takes at least {floor:.0f}s")  # fmt: skip
    print(f"built: {runs[0]['built']}")
    for r in runs:
        load = r["loadavg"]
        print(f"1-min load average during lanes {r['lanes']}: mean {load['mean']:.1f}, "
              f"min {load['min']:.1f}, max {load['max']:.1f} ({os.cpu_count()} cores)")  # fmt: skip
    if len(runs) > 1:
        print(f"total ratio lanes {runs[0]['lanes']} / lanes {runs[-1]['lanes']}: "
              f"{figures.fmt(figures.ratio(runs[0]['total'], runs[-1]['total']))}")  # fmt: skip
    path = figures.write_figures(
        "fresh-machine", {"machine": figures.machine(), "runs": runs}, out=args.out
    )
    print(f"figures: {path}")
    return 0


if __name__ == "__main__":
    figures.run(main)
