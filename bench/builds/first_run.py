"""Benchmark (issue 17): first run to a Ready local cluster when release binaries download.

This machine cannot reach dl.k8s.io or GitHub, so a local HTTP server plays them: it serves
the already-built binaries in the official layouts (``.sha256`` files, etcd's tarball and
``SHA256SUMS``, kwok's release document), optionally throttled to ``--rates`` MB/s. Each run
starts from an empty MOCHAOS_CACHE: download + verify, then ``LocalProvider.up()`` until
every node is Ready. Run: ``python bench/run.py first_run --help``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

import figures

from mochaos.binaries import control_plane, download
from mochaos.cluster.local.cluster_dir import DEFAULT_NAME, DEFAULT_NODES
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.errors import InfraError, UsageError

BENCH_NAME = "mochaos-firstrun"
TARGET_SECONDS = 120.0
"""The issue's target: first run to a Ready cluster within 2 minutes."""
BANDWIDTHS_MBIT = (50, 100, 1000)
"""Links the figures are projected to (Mbit/s)."""


# -- the mirror ----------------------------------------------------------------------------


def _sha(path_or_bytes: Path | bytes) -> str:
    data = path_or_bytes if isinstance(path_or_bytes, bytes) else path_or_bytes.read_bytes()
    return hashlib.sha256(data).hexdigest()


def _tarball(folder: str, binary: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(binary, arcname=f"{folder}/{binary.name}")
    return buf.getvalue()


def lay_out_mirror(root: Path, sources: download.Sources, arch: str) -> int:
    """Write the cached binaries under ``root`` where ``sources`` (URLs on the bench's server)
    will ask for them, with each project's checksum publication; return the bytes served.

    The asset paths come from :data:`mochaos.binaries.download.PLANS`, so the mirror follows
    the downloader's layout; the checksum formats are each project's (see Sources).
    """

    def put(url: str, data: bytes) -> None:
        path = root / urlsplit(url).path.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    served = 0
    for c in control_plane.COMPONENTS:
        if c.name not in download.PLANS:
            continue
        plan = download.PLANS[c.name](c, arch, sources)
        release: list[dict[str, str]] = []
        sums: list[str] = []
        for asset in plan.assets:
            data = (
                _tarball(asset.member.split("/")[0], c.path(asset.binary))
                if asset.member
                else c.path(asset.binary).read_bytes()
            )
            put(asset.url, data)
            served += len(data)
            if c.name == "kubernetes":
                put(f"{asset.url}.sha256", _sha(data).encode())
            sums.append(f"{_sha(data)}  {asset.file_name}")
            release.append({"name": asset.file_name, "digest": f"sha256:{_sha(data)}"})
        if c.name == "etcd":
            put(f"{sources.etcd}/{c.version}/SHA256SUMS", ("\n".join(sums) + "\n").encode())
        if c.name == "kwok":
            put(f"{sources.kwok_release}/{c.version}", json.dumps({"assets": release}).encode())
    return served


class _Throttled(SimpleHTTPRequestHandler):
    """Serves files at most ``rate`` bytes per second per request (0: as fast as it can)."""

    rate = 0.0

    def copyfile(self, source: BinaryIO, outputfile: BinaryIO) -> None:  # type: ignore[override]
        started, sent = time.monotonic(), 0
        while block := source.read(1 << 16):
            outputfile.write(block)
            sent += len(block)
            if self.rate:
                ahead = sent / self.rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def mirror_server(root: Path, rate_mb: float) -> Iterator[str]:
    """Serve ``root`` on 127.0.0.1 (a random port) at ``rate_mb`` MB/s; yield its URL."""
    handler = type("Handler", (_Throttled,), {"rate": rate_mb * 1e6})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(root)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# -- one first run -------------------------------------------------------------------------


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def first_run(*, rate_mb: float, name: str, nodes: int, tmp_dir: Path | None) -> dict[str, Any]:
    """Download into an empty cache from a (throttled) local mirror, then start the cluster."""
    arch = download.release_arch()
    root = Path(tempfile.mkdtemp(prefix="mochaos-firstrun-", dir=tmp_dir))
    try:
        with mirror_server(root / "mirror", rate_mb) as url:
            sources = download.Sources(
                kubernetes=f"{url}/dl.k8s.io/release",
                etcd=f"{url}/github.com/etcd-io/etcd/releases/download",
                kwok=f"{url}/github.com/kubernetes-sigs/kwok/releases/download",
                kwok_release=f"{url}/api.github.com/repos/kubernetes-sigs/kwok/releases/tags",
            )
            served = lay_out_mirror(root / "mirror", sources, arch)
            env = {download.Sources.ENV[k]: getattr(sources, k) for k in download.Sources.ENV}
            env |= {"MOCHAOS_CACHE": str(root / "cache"), download.MODE_ENV: "download"}
            lines: list[str] = []

            def progress(line: str) -> None:
                lines.append(line)
                print(line, file=sys.stderr, flush=True)

            with _environment(env):
                provider = LocalProvider(name=name, nodes=nodes)
                t0 = time.monotonic()
                control_plane.build(progress=progress)
                t1 = time.monotonic()
                try:
                    provider.up()
                    t2 = time.monotonic()
                    if not provider.is_healthy():
                        raise InfraError(f"cluster {name} not healthy right after up()")
                finally:
                    provider.down()
                recipes = {c.name: c.obtained_by() for c in control_plane.COMPONENTS}
        if any(r != download.RECIPE for n, r in recipes.items() if n in download.PLANS):
            raise InfraError(f"not every component was downloaded: {recipes}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    download_s, start_s = t1 - t0, t2 - t1
    return {
        "rate_mb_per_s": rate_mb or None,
        "bytes": served,
        "download_seconds": round(download_s, 2),
        "start_seconds": round(start_s, 2),
        "total_seconds": round(download_s + start_s, 2),
        "effective_mb_per_s": round(served / 1e6 / download_s, 1),
    }


def projections(run: dict[str, Any]) -> dict[str, Any]:
    """Upper bounds from an unthrottled run: its total plus the transfer at each bandwidth
    (the local transfer is counted twice), and the bandwidth the target then needs."""
    total, size = run["total_seconds"], run["bytes"]
    out: dict[str, Any] = {
        f"{mbit} Mbit/s": round(total + size * 8 / (mbit * 1e6), 1) for mbit in BANDWIDTHS_MBIT
    }
    spare = TARGET_SECONDS - total
    out["mbit_needed_for_target"] = round(size * 8 / 1e6 / spare, 1) if spare > 0 else None
    return out


# -- command line -------------------------------------------------------------------------


def _parser() -> figures.Parser:
    p = figures.Parser(prog="python bench/run.py first_run", description=__doc__.splitlines()[0])
    p.add_argument("--name", default=BENCH_NAME, help=f"private cluster (default {BENCH_NAME})")
    p.add_argument("--nodes", type=int, default=DEFAULT_NODES, help="Ready nodes to wait for")
    p.add_argument(
        "--rates",
        default="0,12.5",
        help="comma-separated server rates in MB/s, one first run each; 0 = unthrottled "
        "(default 0,12.5: localhost and ~100 Mbit/s)",
    )
    p.add_argument("--tmp-dir", type=Path, default=None, help="where the mirror and cache go")
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT, help="figures folder")
    return p


def _rates(raw: str) -> list[float]:
    try:
        rates = [float(x) for x in raw.split(",") if x.strip()]
    except ValueError:
        rates = []
    if not rates or any(r < 0 for r in rates):
        raise UsageError(f"--rates {raw!r} is not a list of MB/s", hint="e.g. --rates 0,12.5")
    return rates


def _report(result: dict[str, Any]) -> str:
    rows = [
        [
            "localhost" if r["rate_mb_per_s"] is None else f"{r['rate_mb_per_s']:g} MB/s",
            f"{r['bytes'] / 1e6:.0f} MB",
            figures.fmt(r["download_seconds"], " s", 1),
            figures.fmt(r["start_seconds"], " s", 1),
            figures.fmt(r["total_seconds"], " s", 1),
            f"{r['effective_mb_per_s']:g} MB/s",
        ]
        for r in result["runs"]
    ]
    lines = [
        f"first run to a Ready cluster ({result['nodes']} nodes), downloads from a local mirror",
        figures.table(["server", "size", "download", "start", "total", "effective"], rows),
    ]
    if result["projections"]:
        p = result["projections"]
        shown = ", ".join(f"{k}: ≤ {v:g} s" for k, v in p.items() if k.endswith("Mbit/s"))
        lines.append(f"projected from the unthrottled run: {shown}")
        need = p["mbit_needed_for_target"]
        lines.append(
            f"target {TARGET_SECONDS:.0f} s needs ≥ {need:g} Mbit/s to the release hosts"
            if need
            else f"target {TARGET_SECONDS:.0f} s missed even on localhost"
        )
    lines.append(
        "approximation: our own builds served from 127.0.0.1 (no internet here); official "
        "binaries differ in size, and real downloads add DNS, TLS and GitHub's redirect"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the table, write the figures; return the exit status."""
    args = _parser().parse_args(argv)
    rates = _rates(args.rates)
    if args.name == DEFAULT_NAME:
        raise UsageError(f"--name {DEFAULT_NAME} is the shared cluster", hint="use a private name")
    if not all(c.is_built() for c in control_plane.COMPONENTS if c.name in download.PLANS):
        raise UsageError(
            "the mirror serves already-built binaries: none cached",
            hint="run `python -m mochaos cluster build` first",
        )
    machine = figures.machine()
    runs = [
        first_run(rate_mb=r, name=args.name, nodes=args.nodes, tmp_dir=args.tmp_dir) for r in rates
    ]
    free = next((r for r in runs if r["rate_mb_per_s"] is None), None)
    result = {
        "benchmark": "first_run",
        "nodes": args.nodes,
        "machine": machine,
        "target_seconds": TARGET_SECONDS,
        "runs": runs,
        "projections": projections(free) if free else None,
    }
    print(_report(result))
    print(f"figures: {figures.write_figures('first_run', result, out=args.out)}")
    return 0


if __name__ == "__main__":
    figures.run(main)
