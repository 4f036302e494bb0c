"""Benchmark: how fast the local cluster's supervisor brings back a component killed with
SIGKILL, and how long until the cluster is healthy again.

Starts a private local cluster, kills each component ``--rounds`` times in a row (waiting
for the cluster to be healthy between kills) and reports, per component and round, the
time from the kill to the restart (the supervisor's events file) and to a healthy cluster
(every component running, the API answering, the nodes Ready). Kills in a row are a crash
loop to the supervisor: its back-off doubles from round to round (0.25 s, 0.5 s, 1 s…).
Figures: ``reports/bench/supervisor-restart-<run-id>.json``. Run:
``python bench/run.py supervisor_restart``.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import figures

from mochaos.cluster import events
from mochaos.cluster.local.cluster_dir import COMPONENTS
from mochaos.cluster.local.local_provider import LocalProvider


def kill_and_time(provider: LocalProvider, component: str) -> tuple[float, float]:
    """Kill one component; (seconds to its restart, seconds to a healthy cluster)."""
    before = len(events.read(provider.events_log()))
    pid = provider.running_pids()[component]
    t0 = time.time()
    os.kill(pid, signal.SIGKILL)
    restart = None
    while restart is None:
        new = [e for e in events.read(provider.events_log())[before:] if e.old_pid == pid]
        restart = new[0].t - t0 if new else None
        time.sleep(0.02)
        if time.time() - t0 > 120:
            raise TimeoutError(f"{component} was not restarted within 120s")
    while not provider.is_healthy():
        time.sleep(0.05)
        if time.time() - t0 > 180:
            raise TimeoutError(f"cluster not healthy 180s after killing {component}")
    return restart, time.time() - t0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print a table, write the figures."""
    p = figures.Parser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3, help="kills per component (3)")
    p.add_argument("--cluster-name", default="supervisor-bench", help="a private cluster")
    p.add_argument("--out", type=Path, default=figures.DEFAULT_OUT, help="figures folder")
    args = p.parse_args(argv)
    provider = LocalProvider(name=args.cluster_name)
    if provider.cluster_dir.exists():
        print(
            f"bench: cluster {args.cluster_name} exists; this bench kills the components of "
            "a cluster it starts itself: pass --cluster-name <new name>",
            file=sys.stderr,
        )
        return 2
    provider.up()
    measured: dict[str, dict[str, list[float]]] = {}
    try:
        for component in COMPONENTS:
            times = [kill_and_time(provider, component) for _ in range(args.rounds)]
            measured[component] = {
                "restart": [round(r, 3) for r, _ in times],
                "healthy": [round(h, 3) for _, h in times],
            }
    finally:
        provider.down()
    rows = [
        [c, " ".join(figures.fmt(x) for x in m["restart"]),
         " ".join(figures.fmt(x) for x in m["healthy"])]
        for c, m in measured.items()
    ]  # fmt: skip
    print(figures.table(["component", "restart after kill, per round (s)", "healthy (s)"], rows))
    first = [m["restart"][0] for m in measured.values()]
    print(f"first restart: median {figures.fmt(figures.median(first))} s, "
          f"max {figures.fmt(max(first))} s")  # fmt: skip
    path = figures.write_figures(
        "supervisor-restart", {"machine": figures.machine(), "components": measured},
        out=args.out,
    )  # fmt: skip
    print(f"figures: {path}")
    return 0


if __name__ == "__main__":
    figures.run(main)
