"""The local cluster's processes one by one: their pids, health, status, stop and start.

A component is one of :data:`~mochaos.cluster.local.cluster_dir.COMPONENTS` (kwokctl's pid files
name them); a double is what runs beside the control plane
(:mod:`mochaos.cluster.local.provisions`). Each is known by its pid *and* its command line;
the supervisor's table (:mod:`mochaos.cluster.local.supervisor`) is captured from them as
they run, and a stopped one is held from the supervisor until it is started again.
Relies on :class:`~mochaos.cluster.local.provisions.Provisions` for the doubles
(``doubles``, ``_double``, ``_double_context``, ``_double_health``).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from mochaos.cluster import events
from mochaos.cluster.local import doubles_host, leases
from mochaos.cluster.local.cluster_dir import COMPONENTS, READY_TIMEOUT, LocalClusterBase
from mochaos.cluster.local.processes import ProcessSpec, capture, spawn, write_pid
from mochaos.errors import InfraError, UsageError
from mochaos.procs import cmdline, stop_group, wait_gone
from mochaos.tooling.waiting import wait_for


class Components(LocalClusterBase):
    """Each process of the cluster: which runs, whether the cluster is healthy, one stopped
    and started again."""

    # -- one component -----------------------------------------------------

    def stop_component(self, component: str, *, grace: float = 5.0) -> ProcessSpec:
        """Stop one running component or double (by its pid file, command line checked;
        SIGKILL after ``grace`` seconds) and return how it ran, for :meth:`start_component`;
        the rest of the cluster keeps running. The supervisor leaves it down until it is
        started again (or this process exits). An apiserver down for over ~10 s makes the
        scheduler and controller-manager lose their leases and exit: the supervisor
        restarts them."""
        double = self._double(component)
        if component not in COMPONENTS and double is None:
            names = [*COMPONENTS, *(d.name for d in self.doubles)]
            raise UsageError(
                f"unknown component {component!r}", hint=f"use one of: {', '.join(names)}"
            )
        if double is not None:
            saved = next((s for s in self.supervision.table() if s.name == component), None)
            pid = doubles_host.running(double, self.supervision)
        else:
            pid = self.running_pids().get(component)
            saved = None
        if pid is None:
            raise InfraError(
                f"{component} of cluster {self.cluster_name} is not running",
                hint="start the cluster first (python -m mochaos cluster up)",
            )
        if saved is None:
            saved = capture(component, pid, log=self.cluster_dir / "logs" / f"{component}.log")
        self.supervision.hold(component)
        if double is not None:
            stop_group(pid, saved.argv, grace)
        else:
            stop_pid(pid, component, grace=grace)
        return saved

    def start_component(self, saved: ProcessSpec, *, timeout: float = READY_TIMEOUT) -> int:
        """Start a component or double stopped by :meth:`stop_component` exactly as it ran
        (log appended, pid file updated, supervised again); wait until the cluster answers
        (a double: until it is healthy). The new pid. The leases its predecessor held are
        released first (:mod:`mochaos.cluster.local.leases`)."""
        if saved.name in leases.HELD_BY:
            leases.try_release(self.kubeconfig_path(), saved.name)
        proc = spawn(saved)
        write_pid(self.supervision.process_pid_file(saved.name), proc.pid)
        self.supervision.release(saved.name)
        double = self._double(saved.name)
        if double is None:
            self._wait_ready(timeout)
        else:
            doubles_host.wait_healthy([double], {double.name: self._double_context(double)},
                                      self.supervision, timeout=timeout)  # fmt: skip
        return proc.pid

    # -- health ------------------------------------------------------------

    def pids(self) -> dict[str, int]:
        """Component name -> pid, from kwokctl's pid files (the doubles' are apart)."""
        out: dict[str, int] = {}
        for f in sorted((self.cluster_dir / "pids").glob("*.pid")):
            if f.stem not in COMPONENTS:
                continue
            try:
                out[f.stem] = int(f.read_text().strip())
            except ValueError:
                continue
        return out

    def running_pids(self) -> dict[str, int]:
        """The subset of :meth:`pids` whose process is alive and is the binary we started."""
        return {c: p for c, p in self.pids().items() if is_our_process(p, c)}

    def is_healthy(self) -> bool:
        """True when every component runs, the API answers, enough nodes are Ready and every
        double runs and passes its health check."""
        return not self._control_plane_problems() and not self._double_problems()

    def _control_plane_problems(self) -> list[str]:
        if not self.kubeconfig_path().exists():
            return ["no kubeconfig"]
        missing = [c for c in COMPONENTS if c not in self.running_pids()]
        if missing:
            return [f"not running: {', '.join(missing)}"]
        try:
            ready = self._ready_nodes(timeout=3)
        except Exception as err:
            return [f"API not answering ({type(err).__name__})"]
        return [] if ready >= self.nodes else [f"{ready}/{self.nodes} nodes Ready"]

    def status(self) -> str:
        """The cluster in a few lines: API and nodes, then one line per component, the
        supervisor and each double, with its health."""
        if not self.cluster_dir.exists():
            return f"cluster {self.cluster_name}: not created"
        try:
            api = f"API ready, {self._ready_nodes(timeout=3)}/{self.nodes} nodes Ready"
        except Exception as err:
            api = f"API unreachable ({type(err).__name__})"
        lines = [f"cluster {self.cluster_name}: {api}, kubeconfig {self.kubeconfig_path()}"]
        running = self.running_pids()
        for c in COMPONENTS:
            lines.append(f"  {c:<24} " + (f"running (pid {running[c]})" if c in running
                                          else "NOT RUNNING"))  # fmt: skip
        pid = self.supervision.pid()
        restarts = sum(e.event == "restarted" for e in events.read(self.events_log()))
        lines.append(
            f"  {'supervisor':<24} "
            + (f"running (pid {pid})" if pid else "NOT RUNNING (python -m mochaos cluster up)")
            + f"; {restarts} restart(s) in {self.events_log()}"
        )
        lines.append(
            f"  {'environment':<24} {self.environment.describe()} (what targets asked for)"
        )
        for double, problem in self._double_health():
            pid = doubles_host.running(double, self.supervision)
            state = "healthy" if problem is None else f"NOT HEALTHY: {problem}"
            where = f" (pid {pid})" if pid else ""
            restarts = sum(e.event == "restarted" and e.component == double.name
                           for e in events.read(self.events_log()))  # fmt: skip
            label = f"{double.kind} {double.name}"
            lines.append(f"  {label:<24} {state}{where}; {restarts} restart(s)")
        return "\n".join(lines)

    def _supervise_components(self) -> None:
        """Capture how each component runs into the supervisor's table; start the
        supervisor."""
        logs = self.cluster_dir / "logs"
        specs = [capture(c, pid, log=logs / f"{c}.log") for c, pid in self.running_pids().items()]
        doubles = [s for s in self.supervision.table() if s.name not in COMPONENTS]
        self.supervision.set_table([*specs, *doubles])
        self.supervision.ensure_running()

    def _client(self, timeout: float):
        from kubernetes import client, config

        api = config.new_client_from_config(config_file=str(self.kubeconfig_path()))
        api.configuration.retries = 0
        return client.CoreV1Api(api), timeout

    def _ready_nodes(self, *, timeout: float) -> int:
        core, t = self._client(timeout)
        nodes = core.list_node(_request_timeout=t).items
        ready = 0
        for node in nodes:
            for cond in node.status.conditions or []:
                if cond.type == "Ready" and cond.status == "True":
                    ready += 1
        core.api_client.close()
        return ready

    def _wait_for(self, problems: Callable[[], list[str]], timeout: float) -> list[str]:
        """Poll ``problems`` until it returns none (then []) or ``timeout`` passes (the last)."""
        deadline = time.monotonic() + timeout
        while (found := problems()) and time.monotonic() < deadline:
            time.sleep(0.2)
        return found

    def _wait_ready(self, timeout: float) -> None:
        def nodes_ready() -> tuple[bool, str]:
            ready = self._ready_nodes(timeout=3)
            return ready >= self.nodes, f"{ready}/{self.nodes} nodes Ready"

        wait_for(
            nodes_ready, what="local cluster", timeout=timeout, interval=0.2,
            hint=f"see the component logs in {self.cluster_dir / 'logs'}",
        )  # fmt: skip


def is_our_process(pid: int, component: str) -> bool:
    """True when pid is alive and its command line is the component's binary."""
    cmd = cmdline(pid)
    return bool(cmd) and component in Path(cmd[0]).name


def stop_pid(pid: int, component: str, grace: float = 5.0) -> None:
    """SIGTERM then SIGKILL one of our processes, verifying its command line first; returns
    once it is gone."""
    if not is_our_process(pid, component):
        return
    os.kill(pid, signal.SIGTERM)
    if _gone_within(pid, component, grace):
        return
    os.kill(pid, signal.SIGKILL)
    _gone_within(pid, component, grace)


def _gone_within(pid: int, component: str, seconds: float) -> bool:
    return wait_gone(lambda: is_our_process(pid, component), seconds)
