"""Benchmark (issue 35): what the interposer between the operator and the apiserver costs.

Two parts, one run each, on the warm local cluster:

- **per request and per event**: an interposer started in front of the cluster's apiserver and
  the interposer's own Go bench (go/interposer/cmd/bench: client-go, HTTP/2 keep-alive on both
  sides): GETs direct and through it interleaved, a watch's ADDED events direct and through
  it; p50 and p99 of each and of the difference; the interposer's memory idle and after.
- **whole scenarios**: the suites selected by ``-k`` (default: the README's main job) with
  ``--mochaos-interposer on`` and ``off``, alternating (``--repeat`` pairs), the same seed:
  wall times, their ratio, each scenario's verdict in both (they must be identical for every
  scenario judged in both; one that needs the interposer errs without it and is listed), the
  interposers' largest RSS seen during the ``on`` runs.

Prints the tables; writes the figures as JSON to ``--out``; exit 1 when verdicts differ.
Run: ``python bench/run.py interposer_overhead --help``; with ``--operator source:<checkout>@<rev>``
for the real seed.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from figures import Parser, fmt, machine, median, ratio, table, write_figures
from figures import run as run_bench
from speed.main_job import Run, run  # bench/ is on sys.path (bench/run.py)

from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.interpose.interposer_build import NAME, binary
from mochaos.interpose.proxy import Interposer
from mochaos.paths import go_module

_LINE = re.compile(r"^\s+(?P<name>.+?)\s+n=(?P<n>\d+)\s+p50=(?P<p50>\S+)\s+p99=(?P<p99>\S+)")
JUDGED = ("passed", "failed")
"""Outcomes that are a verdict; only scenarios with one in every run are compared."""
_UNITS = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3}


def millis(duration: str) -> float:
    """A Go duration (``1.48ms``, ``850µs``) in milliseconds."""
    m = re.fullmatch(r"([0-9.]+)(ns|µs|us|ms|s)", duration)
    if m is None:
        raise ValueError(f"not a Go duration: {duration!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


def micro(kubeconfig: Path, out: Path) -> dict[str, dict[str, float]]:
    """The Go bench through a fresh interposer: "<section>: <name>" -> {n, p50, p99} in ms
    (the GET and the watch sections both have a "through interposer" line)."""
    proxy = Interposer(out / "micro", upstream_kubeconfig=kubeconfig).start()
    try:
        cmd = [
            "go", "run", "./cmd/bench", "--kubeconfig", str(kubeconfig),
            "--proxy-kubeconfig", str(proxy.kubeconfig), "--proxy-pid", str(proxy.pid),
        ]  # fmt: skip
        env = {**os.environ, "GOWORK": "off", "GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"}
        text = subprocess.run(cmd, cwd=go_module(NAME), env=env, capture_output=True, text=True,
                              check=True, timeout=900).stdout  # fmt: skip
    finally:
        proxy.stop()
    (out / "micro.txt").write_text(text)
    found = {}
    section = ""
    for line in text.splitlines():
        if not line.startswith(" ") and ":" in line:
            section = line.split(",")[0].split(":")[0].strip()  # "GET configmap", "watch"
        m = _LINE.match(line)
        if m:
            found[f"{section}: {m['name'].strip()}"] = {
                "n": float(m["n"]), "p50": millis(m["p50"]), "p99": millis(m["p99"])
            }  # fmt: skip
    return found


class RssWatch:
    """Samples the RSS of every interposer process of this machine's binary, every second."""

    def __init__(self, exe: Path) -> None:
        self._exe = str(exe)
        self.peak_mib = 0.0
        self.count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> RssWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            for proc in Path("/proc").iterdir():
                try:
                    argv0 = (proc / "cmdline").read_bytes().split(b"\0")[0].decode()
                    if argv0 != self._exe:
                        continue
                    kib = next(int(line.split()[1]) for line in (proc / "status").read_text()
                               .splitlines() if line.startswith("VmRSS:"))  # fmt: skip
                except (OSError, StopIteration, ValueError):
                    continue
                self.count = max(self.count, 1)
                self.peak_mib = max(self.peak_mib, kib / 1024)


def main(argv: Sequence[str] | None = None) -> int:
    """Run both parts; print the tables; exit 1 when the scenarios' verdicts differ."""
    p = Parser(prog="python bench/run.py interposer_overhead", description=__doc__)
    p.add_argument("-k", dest="keyword", default="scalein_during_migration")
    p.add_argument("--operator", default=None, help="operator target (default: the README's)")
    p.add_argument("--repeat", type=int, default=1, help="pairs of on/off runs (default 1)")
    p.add_argument("--seed", type=int, default=1234, help="--chaos-seed of every run")
    p.add_argument("--skip-micro", action="store_true", help="only the whole scenarios")
    p.add_argument("--out", type=Path, default=None, help="keep logs and reports here")
    p.add_argument(
        "--reports",
        type=Path,
        default=Path("reports/bench"),
        help="where the figures' JSON goes (default: reports/bench)",
    )
    args = p.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="mochaos-bench-interposer-"))
    out.mkdir(parents=True, exist_ok=True)
    cluster = LocalProvider(name="mochaos").up()
    figures: dict[str, object] = {}
    if not args.skip_micro:
        found = micro(Path(cluster.kubeconfig), out)
        figures["micro"] = found
        print(table(["measure", "n", "p50 ms", "p99 ms"],
                    [[k, fmt(v["n"], digits=0), fmt(v["p50"], digits=3), fmt(v["p99"], digits=3)]
                     for k, v in found.items()]))  # fmt: skip
    common = {"out": out, "keyword": args.keyword, "seed": args.seed, "operator": args.operator}
    runs: dict[str, list[Run]] = {"on": [], "off": []}
    with RssWatch(binary()) as rss:
        for i in range(args.repeat):
            for mode in ("on", "off") if i % 2 == 0 else ("off", "on"):
                runs[mode].append(run(f"interposer {mode} #{i + 1}",
                                      ["--mochaos-interposer", mode], **common))  # fmt: skip
    on, off = (median([r.seconds for r in runs[m]]) for m in ("on", "off"))
    every = [r.verdicts for rs in runs.values() for r in rs]
    judged = sorted(k for k in every[0] if all(v.get(k, ("",))[0] in JUDGED for v in every))
    alone = sorted({k for v in every for k in v} - set(judged))
    same = bool(judged) and all(v[k] == every[0][k] for v in every for k in judged)
    print(table(["run", "seconds", "exit", "verdicts"],
                [[r.mode, fmt(r.seconds, digits=0), str(r.exit_code),
                  "; ".join(f"{k}: {o} {','.join(i)}" for k, (o, i) in sorted(r.verdicts.items()))]
                 for rs in runs.values() for r in rs]))  # fmt: skip
    print(
        f"\nwall time median: on {fmt(on, 's', 0)}, off {fmt(off, 's', 0)}; "
        f"on/off {fmt(ratio(on, off), digits=3)}; verdicts of the {len(judged)} scenario(s) "
        f"judged in every run {'identical' if same else 'DIFFER'}; interposer RSS peak "
        f"{rss.peak_mib:.1f} MiB"
        + (f"\nnot judged in every run (a scenario that needs the interposer errs without it): "
           f"{', '.join(alone)}" if alone else "")
    )  # fmt: skip
    figures |= {
        "on_seconds": on, "off_seconds": off, "ratio": ratio(on, off),
        "verdicts_identical": same, "not_judged_in_every_run": alone,
        "rss_peak_mib": round(rss.peak_mib, 1), **machine(),
        "runs": {m: [[r.seconds, r.exit_code] for r in rs] for m, rs in runs.items()},
    }  # fmt: skip
    path = write_figures("interposer_overhead", figures, out=args.reports)
    print(f"figures: {path}")
    return 0 if same else 1


if __name__ == "__main__":
    run_bench(main)
