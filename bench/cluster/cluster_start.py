"""Benchmark (issue 2): local cluster cold start vs warm reuse, and the first build.

Cold = ``down()`` then ``up()`` of a private cluster until the API answers with every
node Ready; warm = ``up()`` on the running cluster. The first-build time comes from the
last build in the build log (default) or from a real build into empty caches
(``--cold-build``). Run: ``python bench/run.py cluster_start --help``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import figures

from mochaos.binaries import control_plane, download
from mochaos.binaries.component import Component
from mochaos.cluster.local.cluster_dir import DEFAULT_NAME, DEFAULT_NODES
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.errors import InfraError, UsageError
from mochaos.paths import cache_dir

BENCH_NAME = "mochaos-bench"
COLD_BUILD_MIN_FREE = 6 * 2**30
"""Bytes a cold build needs in the temporary directory (module cache, build cache, binaries)."""

_STEP = re.compile(r"^\$ \(cd (?P<cwd>.+?) && (?P<cmd>.+)\)$")
_OUTPUT = re.compile(r" -o (\S+) ")


# -- cold and warm start ----------------------------------------------------------------


def time_starts(provider: LocalProvider, *, repeat: int) -> dict[str, list[float]]:
    """Seconds of ``repeat`` cold starts (down, then up), then ``repeat`` warm ``up()``s.

    ``down`` holds the downs of a cluster that existed (not the first, on a fresh machine).
    """
    times: dict[str, list[float]] = {"cold": [], "warm": [], "down": []}
    for kind in ("cold", "warm"):
        for i in range(1, repeat + 1):
            if kind == "cold":
                existed = provider.cluster_dir.exists()
                t0 = time.monotonic()
                provider.down()
                if existed:
                    times["down"].append(time.monotonic() - t0)
            t0 = time.monotonic()
            provider.up()
            times[kind].append(time.monotonic() - t0)
            if not provider.is_healthy():
                raise InfraError(
                    f"cluster {provider.cluster_name} not healthy right after up()",
                    hint=provider.status(),
                )
            print(f"bench: {kind} start {i}/{repeat}: {times[kind][-1]:.2f}s", file=sys.stderr)
    return times


# -- first build from the build log -------------------------------------------------------


@dataclass
class Step:
    """One go command of the build log, with its output."""

    cwd: Path
    cmd: str
    output: list[str] = field(default_factory=list)

    @property
    def binary(self) -> Path | None:
        """The binary a ``go build -o`` step writes (None for module resolution)."""
        m = _OUTPUT.search(self.cmd)
        return Path(m.group(1)) if m and " build " in self.cmd else None

    @property
    def packages(self) -> int:
        """Packages compiled (``go build -v`` names only those not in the Go build cache)."""
        return sum(1 for ln in self.output if ln.strip() and not ln.startswith(("go: ", "#")))

    @property
    def downloads(self) -> int:
        """Modules fetched from the proxy (not yet in the module cache)."""
        return sum(1 for ln in self.output if ln.startswith("go: downloading "))

    def component(self) -> Component | None:
        """The component whose build folder the step ran in (None for another version)."""
        return next(
            (c for c in control_plane.COMPONENTS if self.cwd.name == c.directory.name), None
        )

    def order(self) -> tuple[int, int]:
        """Position in one build: component, then download < get < each binary."""
        c = self.component()
        if c is None:
            return (-1, -1)
        if self.binary is not None:
            return (control_plane.COMPONENTS.index(c), 2 + c.binaries.index(self.binary.name))
        return (control_plane.COMPONENTS.index(c), 0 if " mod download " in self.cmd else 1)


def parse_log(text: str) -> list[Step]:
    """The build log's go commands, in order."""
    steps: list[Step] = []
    for line in text.splitlines():
        m = _STEP.match(line)
        if m:
            steps.append(Step(Path(m.group("cwd")), m.group("cmd")))
        elif steps:
            steps[-1].output.append(line)
    return steps


def sessions(steps: list[Step]) -> list[list[Step]]:
    """Split the log into builds: a build's steps always move forward in :meth:`Step.order`."""
    out: list[list[Step]] = []
    for step in steps:
        if not out or step.order() <= out[-1][-1].order():
            out.append([])
        out[-1].append(step)
    return out


def _is_complete(session: list[Step]) -> bool:
    built: dict[str, set[str]] = {}
    for step in session:
        c = step.component()
        if c is None:
            return False
        built.setdefault(c.name, set())
        if step.binary is not None:
            built[c.name].add(step.binary.name)
    return all(
        built[c.name] == set(c.binaries) for c in control_plane.COMPONENTS if c.name in built
    )


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _span(start: float | None, end: float | None) -> float | None:
    if start is None or end is None or end < start:
        return None
    return round(end - start, 1)


def figures_from_log(log: Path) -> dict[str, Any]:
    """First-build figures of the last build in ``log``, timed by file modification times.

    Concurrent builds interleave their timestamped progress lines in the log, so the
    times come from files instead: a binary's mtime ends its ``go build``, the wrapper
    module's go.sum ends its resolution, the ``.complete`` stamp ends its component.
    What starts the first component is unknown, so its resolution has no time.
    """
    if not log.is_file():
        raise InfraError(
            f"no build log at {log}",
            hint="build once with `python -m mochaos cluster build`, or pass --cold-build",
        )
    runs = sessions(parse_log(log.read_text(encoding="utf-8", errors="replace")))
    if not runs or not _is_complete(runs[-1]):
        raise InfraError(
            f"the last build in {log} did not finish",
            hint="run `python -m mochaos cluster build`, or pass --cold-build",
        )
    last = runs[-1]
    components: list[dict[str, Any]] = []
    previous_end: float | None = None
    started: float | None = None
    for c in [c for c in control_plane.COMPONENTS if any(s.component() == c for s in last)]:
        steps = [s for s in last if s.component() == c]
        resolved = _mtime(steps[0].cwd / "go.sum")
        started = resolved if started is None else started
        entry: dict[str, Any] = {
            "component": f"{c.name} {c.version}",
            "resolve_seconds": _span(previous_end, resolved),
            "modules_downloaded": sum(s.downloads for s in steps if s.binary is None),
            "binaries": [],
        }
        end = resolved
        for s in steps:
            if s.binary is not None:
                begin, end = end, _mtime(s.binary)
                entry["binaries"].append(
                    {"binary": s.binary.name, "seconds": _span(begin, end), "packages": s.packages}
                )
        done = _mtime(c.stamp)
        entry["seconds"] = _span(previous_end, done)
        components.append(entry)
        previous_end = done
    return {
        "source": f"last complete build in {log}; times from file modification times "
        "(concurrent builds interleave in the log): binaries, wrapper go.sum, .complete stamps",
        "components": components,
        "total_seconds": _span(started, previous_end),
        "total_excludes": f"{components[0]['component']} module resolution (start unknown)",
    }


# -- first build for real -----------------------------------------------------------------

_COMPONENT_START = re.compile(r"^(?P<name>[a-z]+) v\S+:$")
_COMPONENT_END = re.compile(r"^(?P<name>[a-z]+) v\S+ done in ")
_BINARY_START = re.compile(r"^\s+\[\d+/\d+\] (?P<binary>\S+) v\S+ …$")
_BINARY_END = re.compile(r"^\s+\[\d+/\d+\] (?P<binary>\S+) built in ")


def figures_from_progress(
    events: list[tuple[float, str]], steps: list[Step], *, started: float
) -> dict[str, Any]:
    """First-build figures from timestamped progress lines of ``control_plane.build`` and
    its log."""
    packages = {s.binary.name: s.packages for s in steps if s.binary is not None}
    downloads: dict[str, int] = {}
    for s in steps:
        c = s.component()
        if c is not None and s.binary is None:
            downloads[c.name] = downloads.get(c.name, 0) + s.downloads
    components: list[dict[str, Any]] = []
    component_start: dict[str, float] = {}
    binary_start: dict[str, float] = {}
    for t, line in events:
        if m := _COMPONENT_START.match(line):
            c = control_plane.component(m["name"])
            component_start[c.name] = t
            components.append(
                {
                    "component": f"{c.name} {c.version}",
                    "resolve_seconds": None,
                    "modules_downloaded": downloads.get(c.name, 0),
                    "binaries": [],
                }
            )
        elif m := _BINARY_START.match(line):
            binary_start[m["binary"]] = t
            if components[-1]["resolve_seconds"] is None:
                name = components[-1]["component"].split()[0]
                components[-1]["resolve_seconds"] = _span(component_start[name], t)
        elif m := _BINARY_END.match(line):
            b = m["binary"]
            components[-1]["binaries"].append(
                {"binary": b, "seconds": _span(binary_start[b], t), "packages": packages.get(b, 0)}
            )
        elif m := _COMPONENT_END.match(line):
            components[-1]["seconds"] = _span(component_start[m["name"]], t)
    return {
        "source": "cold build into empty temporary MOCHAOS_CACHE, GOCACHE and GOMODCACHE, "
        "timed from build progress",
        "components": components,
        "total_seconds": _span(started, events[-1][0] if events else None),
        "total_excludes": "",
    }


def _remove_tree(root: Path) -> None:
    """Remove a tree that holds Go's read-only module cache."""
    for folder, _, _ in os.walk(root):
        os.chmod(folder, 0o755)
    shutil.rmtree(root)


def cold_build(*, tmp_dir: Path | None) -> dict[str, Any]:
    """Build every component into empty temporary caches, time each step, remove the caches."""
    where = tmp_dir or Path(tempfile.gettempdir())
    if shutil.disk_usage(where).free < COLD_BUILD_MIN_FREE:
        raise UsageError(
            f"a cold build needs {COLD_BUILD_MIN_FREE // 2**30} GB free in {where}",
            hint="free some space or pass --tmp-dir on a larger disk",
        )
    root = Path(tempfile.mkdtemp(prefix="mochaos-coldbuild-", dir=where))
    env = {
        "MOCHAOS_CACHE": str(root / "cache"),
        "GOCACHE": str(root / "gocache"),
        "GOMODCACHE": str(root / "gomodcache"),
        download.MODE_ENV: "build",  # a build, even where release binaries could be had
    }
    saved = {k: os.environ.get(k) for k in env}
    events: list[tuple[float, str]] = []

    def progress(line: str) -> None:
        events.append((time.monotonic(), line))
        print(line, file=sys.stderr, flush=True)

    print(f"bench: cold build in {root} (removed afterwards)", file=sys.stderr)
    os.environ.update(env)
    try:
        started = time.monotonic()
        control_plane.build(force=True, progress=progress)
        steps = parse_log((cache_dir() / "build.log").read_text(encoding="utf-8"))
        return figures_from_progress(events, steps, started=started)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _remove_tree(root)


# -- command line -------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = figures.Parser(
        prog="python bench/run.py cluster_start", description=__doc__.splitlines()[0]
    )
    p.add_argument("--name", default=BENCH_NAME, help=f"private cluster (default {BENCH_NAME})")
    p.add_argument("--nodes", type=int, default=DEFAULT_NODES, help="Ready nodes to wait for")
    p.add_argument("--repeat", type=int, default=5, help="cold and warm starts each (default 5)")
    p.add_argument("--keep", action="store_true", help="leave the private cluster running")
    p.add_argument(
        "--cold-build",
        action="store_true",
        help="build into empty temporary caches (15-30 min on 2 cores, a few GB of disk)",
    )
    p.add_argument("--tmp-dir", type=Path, default=None, help="where --cold-build's caches go")
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT, help="figures folder")
    return p


def _check(args: argparse.Namespace) -> None:
    if args.name == DEFAULT_NAME:
        raise UsageError(
            f"--name {DEFAULT_NAME} is the shared cluster other runs use",
            hint=f"use a private name, e.g. the default {BENCH_NAME}",
        )
    if args.repeat < 1 or args.nodes < 1:
        raise UsageError("--repeat and --nodes must be at least 1", hint="e.g. --repeat 5")


def _report(result: dict[str, Any]) -> str:
    s = result["starts"]
    rows = [
        [
            k,
            figures.fmt(s[f"{k}_median"], " s"),
            figures.fmt(min(s[k], default=None), " s"),
            figures.fmt(max(s[k], default=None), " s"),
        ]
        for k in ("cold", "warm", "down")
    ]
    lines = [
        f"cluster start: private cluster {result['cluster']}, {result['nodes']} nodes, "
        f"{result['repeat']} of each",
        figures.table(["", "median", "min", "max"], rows),
        f"cold/warm ratio (medians): {figures.fmt(s['cold_over_warm'], '×', 1)}",
        "",
        f"first build ({result['first_build']['source']})",
    ]
    b = result["first_build"]
    rows = []
    for c in b["components"]:
        note = f"{c['modules_downloaded']} modules downloaded"
        rows.append([c["component"], "resolve", figures.fmt(c["resolve_seconds"], " s", 1), note])
        for x in c["binaries"]:
            cached = " (all from the Go build cache)" if x["packages"] == 0 else ""
            pkgs = f"{x['packages']} packages compiled{cached}"
            rows.append(["", x["binary"], figures.fmt(x["seconds"], " s", 1), pkgs])
        rows.append(["", "component", figures.fmt(c.get("seconds"), " s", 1), ""])
    lines.append(figures.table(["component", "step", "time", "note"], rows))
    excludes = f" (excludes {b['total_excludes']})" if b["total_excludes"] else ""
    lines.append(f"total: {figures.fmt(b['total_seconds'], ' s', 1)}{excludes}")
    cached = [x["binary"] for c in b["components"] for x in c["binaries"] if x["packages"] == 0]
    if cached:
        lines.append(
            f"not a first build: {', '.join(cached)} came whole from a warm Go build cache; "
            "pass --cold-build to measure one"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the table, write the figures; return the exit status."""
    args = _parser().parse_args(argv)
    _check(args)
    # Read the log first: a missing or unfinished build fails before a minute of starts.
    first_build = None if args.cold_build else figures_from_log(cache_dir() / "build.log")
    provider = LocalProvider(name=args.name, nodes=args.nodes)
    machine = figures.machine()
    try:
        times = time_starts(provider, repeat=args.repeat)
    finally:
        if not args.keep:
            provider.down()
    starts: dict[str, Any] = dict(times)
    for k in ("cold", "warm", "down"):
        starts[f"{k}_median"] = figures.median(times[k])
    starts["cold_over_warm"] = figures.ratio(starts["cold_median"], starts["warm_median"])
    if first_build is None:
        first_build = cold_build(tmp_dir=args.tmp_dir)
    result = {
        "benchmark": "cluster_start",
        "cluster": args.name,
        "nodes": args.nodes,
        "repeat": args.repeat,
        "machine": machine,
        "starts": starts,
        "first_build": first_build,
    }
    print(_report(result))
    print(f"figures: {figures.write_figures('cluster_start', result, out=args.out)}")
    return 0


if __name__ == "__main__":
    figures.run(main)
