"""The embedded local cluster: a real control plane from cached Go-built binaries.

``kwokctl --runtime binary`` runs etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and the kwok controller as plain processes, every one pointed at
our cached binaries (kwokctl only downloads ``http(s)://`` sources), bound to
127.0.0.1, with our kubectl first on PATH (kwokctl prefers whatever kubectl it
finds) and an apiserver audit log. kwok's fake nodes make pods schedule, go
Running, and really disappear when deleted. ``MOCHAOS_CLUSTER_NAME`` picks
another cluster than ``mochaos`` and ``MOCHAOS_APISERVER_PORT`` fixes the
apiserver's port (otherwise :mod:`mochaos.cluster.ports` picks a free one, as every other
component's). kwok plays the kubelet with its
default Stages plus the kubelet stand-ins of :mod:`mochaos.cluster.kwok_stages`. What an
operator target needs beside the control plane (kruise-manager, the MatrixOne double:
:mod:`mochaos.cluster.environment`) is started when the target asks for it
(:meth:`LocalProvider.provide`), and a supervisor (:mod:`mochaos.cluster.supervisor`)
restarts any component or such process that exits.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock

from mochaos.binaries import control_plane
from mochaos.binaries.kwok_stages import DEFAULTS_FILE, storage_class
from mochaos.cluster import (
    attached,
    doubles_host,
    environment,
    events,
    in_use,
    kwok_stages,
    leases,
    ports,
)
from mochaos.cluster.environment import Environment
from mochaos.cluster.processes import ProcessSpec, capture, last_line, spawn, write_pid
from mochaos.cluster.supervisor import KUBECONFIG_FILE, Supervision
from mochaos.doubles import DoubleContext, DoubleSpec
from mochaos.errors import InfraError, UsageError
from mochaos.kube import Cluster
from mochaos.paths import machine_lock, state_dir
from mochaos.procs import cmdline, port_in_use, stop_group, wait_gone
from mochaos.progress import announce
from mochaos.tooling.waiting import wait_for

DEFAULT_NAME = "mochaos"
NAME_ENV = "MOCHAOS_CLUSTER_NAME"
PORT_ENV = "MOCHAOS_APISERVER_PORT"
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
              leases.KWOK_CONTROLLER)  # fmt: skip
DEFAULT_NODES = 3
NODE_PREFIX = "kwok-node"
CREATE_TIMEOUT = 180.0
READY_TIMEOUT = 60.0
RECOVER_TIMEOUT = 45.0
"""Seconds ``up()`` gives an existing cluster's supervisor to bring back what exited (a
restarted scheduler waits up to 15 s for its predecessor's lease) before recreating it."""
LOCK_TIMEOUT = 3600.0
CREATE_LOCK = "kwokctl-create"
"""The machine-wide lock cluster creations take (:meth:`LocalProvider.creation_lock`)."""
STAGES_DIGEST = "stages.digest"
"""In the cluster's folder: a digest of the kwok Stages it was created with."""

_AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        # Heartbeats of kwok's fake nodes and leader leases would drown the log.
        {"level": "None", "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}]},
        {"level": "None", "resources": [{"group": "", "resources": ["nodes", "nodes/status"]}]},
        {"level": "None", "nonResourceURLs": ["/healthz*", "/readyz*", "/livez*", "/version"]},
        {"level": "Metadata"},
    ],
}


def _say(line: str) -> None:
    announce(line)


def _port_from_env() -> int | None:
    raw = os.environ.get(PORT_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise UsageError(
            f"{PORT_ENV}={raw!r} is not a TCP port",
            hint=f"set {PORT_ENV} to a free port (1-65535), or unset it for a random one",
        )
    return int(raw)


def check_port_free(port: int) -> None:
    """Raise InfraError naming ``port`` when something already listens on it (127.0.0.1)."""
    if port_in_use(port, hosts=("127.0.0.1",)):
        raise InfraError(
            f"apiserver port {port} on 127.0.0.1 is already in use",
            hint=f"free it (`ss -ltnp 'sport = :{port}'` shows the owner) or set "
            f"{PORT_ENV} to another port, or unset it for a random one",
        )


class LocalProvider:
    """Starts, reuses and removes one named local cluster (see module docstring)."""

    name = "local"

    def __init__(
        self,
        *,
        name: str | None = None,
        nodes: int = DEFAULT_NODES,
        apiserver_port: int | None = None,
        doubles: Sequence[DoubleSpec] | None = None,
    ) -> None:
        """``name`` defaults to $MOCHAOS_CLUSTER_NAME or ``mochaos``; ``apiserver_port`` to
        $MOCHAOS_APISERVER_PORT or a free port kwokctl picks; ``doubles`` are run on every
        start besides what targets asked for (:meth:`provide`)."""
        self.cluster_name = name or os.environ.get(NAME_ENV) or DEFAULT_NAME
        self.nodes = nodes
        self.apiserver_port = apiserver_port if apiserver_port is not None else _port_from_env()
        self._explicit: tuple[DoubleSpec, ...] = tuple(doubles or ())
        doubles_host.check_registry(self._explicit, COMPONENTS)
        self.workdir = state_dir() / "kwok"
        self.cluster_dir = self.workdir / "clusters" / self.cluster_name
        self.supervision = Supervision(self.cluster_dir)

    @property
    def environment(self) -> Environment:
        """What targets asked this cluster to run so far (:meth:`provide`)."""
        return environment.read(self.cluster_dir)

    @property
    def doubles(self) -> tuple[DoubleSpec, ...]:
        """Every process run beside the control plane: the given doubles, then the
        environment's (:func:`mochaos.cluster.environment.parts`)."""
        parts = environment.parts(self.environment)
        return (
            *self._explicit,
            *(p for p in parts if p.name not in {d.name for d in self._explicit}),
        )

    # -- paths -------------------------------------------------------------

    def kubeconfig_path(self) -> Path:
        """The cluster's kubeconfig (exists once the cluster was created)."""
        return self.cluster_dir / KUBECONFIG_FILE

    def audit_log(self) -> Path | None:
        """The apiserver audit log (JSON lines of audit.k8s.io/v1 Events)."""
        path = self.cluster_dir / "logs" / "audit.log"
        return path if path.exists() else None

    def events_log(self) -> Path:
        """The cluster's events file: one JSON line per restart by the supervisor."""
        return self.supervision.events_file

    def _lock(self) -> FileLock:
        self.workdir.mkdir(parents=True, exist_ok=True)
        # Long enough for a cold build by another process (xdist workers share one cluster).
        return FileLock(str(self.workdir / f"{self.cluster_name}.lock"), timeout=LOCK_TIMEOUT)

    # -- lifecycle ---------------------------------------------------------

    def up(self) -> Cluster:
        """Start the cluster or reuse an existing one; build binaries on first use.

        An existing cluster gets its supervisor back if it died, which restarts whatever
        exited meanwhile; a double that does not run, or runs another command than this
        mo-chaos would start, is started afresh once the control plane answers; only a
        cluster that does not recover is recreated. This process then counts as using the
        cluster until it exits (:mod:`mochaos.cluster.in_use`).
        """
        # The API client's modules (imported lazily, on first attribute use) take seconds of
        # CPU: load them before the lock, so that xdist workers reusing a healthy cluster
        # hold it only to check it.
        from kubernetes.client import CoreV1Api  # noqa: F401

        with self._lock():
            if not control_plane.all_built():
                control_plane.build()
            if self.cluster_dir.exists():
                problem = self._recover()
                if problem is None:
                    in_use.share(self.cluster_dir)
                    return self._cluster()
                _say(f"cluster {self.cluster_name} did not recover ({problem}); recreating it")
                self._delete()
            t0 = time.monotonic()
            self._create()
            self._wait_ready(READY_TIMEOUT)
            self._supervise_components()
            self._start_doubles()
            _say(f"cluster {self.cluster_name} ready in {time.monotonic() - t0:.1f}s")
            in_use.share(self.cluster_dir)
            return self._cluster()

    def provide(self, env: Environment) -> None:
        """Run ``env`` on this (running) cluster besides what it runs already: build what is
        missing, start it, wait until healthy. A kruise-manager of another version is
        replaced by the one asked for."""
        if not self.kubeconfig_path().exists():
            raise InfraError(
                f"cluster {self.cluster_name} is not running: nothing to provide "
                f"{env.describe()} to",
                hint="start it first (python -m mochaos cluster up)",
            )
        environment.build(env)  # outside the cluster's lock: a cold build takes minutes
        with self._lock():
            wanted = environment.merged(self.environment, env)
            if wanted == self.environment and not self._double_problems():
                return
            doubles_host.check_registry(environment.parts(wanted), COMPONENTS)
            _say(f"cluster {self.cluster_name}: providing {wanted.describe()}")
            environment.write(self.cluster_dir, wanted)
            self._refresh_doubles()
            self._start_doubles(only_missing=True)

    def current(self) -> Cluster | None:
        """The cluster as it runs now (nothing started, nothing held), or None when its
        control plane does not run."""
        if not self.kubeconfig_path().is_file() or self._control_plane_problems():
            return None
        return self._cluster()

    def _recover(self) -> str | None:
        """Bring an existing cluster back under supervision; None when it is healthy again,
        else what is still wrong."""
        if not self.kubeconfig_path().exists():
            return "no kubeconfig"
        changed = self._stages_changed()
        if changed:
            return changed
        if not self.supervision.table():
            # A cluster started before supervision existed: supervise it as it runs.
            missing = set(COMPONENTS) - set(self.running_pids())
            if missing:
                return f"not running: {', '.join(sorted(missing))}"
            self._supervise_components()
        self._refresh_doubles()
        pid, started = self.supervision.ensure_running()
        if started:
            _say(f"cluster {self.cluster_name}: supervisor was not running; started (pid {pid})")
        problems = self._wait_for(self._control_plane_problems, RECOVER_TIMEOUT)
        if problems:
            return "; ".join(problems)
        self._start_doubles(only_missing=True)
        return None

    def _stages_changed(self) -> str | None:
        """Why the cluster's kwok Stages are not this mo-chaos's (None when they are): a
        cluster created by an older mo-chaos lacks the kubelet stand-ins or has others."""
        try:
            have = (self.cluster_dir / STAGES_DIGEST).read_text().strip()
        except OSError:
            have = ""
        return None if have == _stages_digest() else "its kwok Stages are not this mo-chaos's"

    def _supervise_components(self) -> None:
        """Capture how each component runs into the supervisor's table; start the
        supervisor."""
        logs = self.cluster_dir / "logs"
        specs = [capture(c, pid, log=logs / f"{c}.log") for c, pid in self.running_pids().items()]
        doubles = [s for s in self.supervision.table() if s.name not in COMPONENTS]
        self.supervision.set_table([*specs, *doubles])
        self.supervision.ensure_running()

    def _refresh_doubles(self) -> None:
        """Take the stale doubles (:func:`doubles_host.stale`) out of the supervisor's table,
        stopping those that run, so that ``_start_doubles`` starts them afresh once the
        control plane answers: a double restarted from a gone run's entry would start
        before the apiserver, or run code this mo-chaos no longer has."""
        contexts = {d.name: self._double_context(d) for d in self.doubles}
        restarting = self.supervision.pid() is not None
        old = doubles_host.stale(self.doubles, contexts, self.supervision, restarting=restarting)
        if not old:
            return
        names = {s.name for s in old}
        for name in names:
            self.supervision.hold(name)
        try:
            self.supervision.set_table([s for s in self.supervision.table() if s.name not in names])
            doubles_host.stop_specs(self.supervision, old)
        finally:
            for name in names:
                self.supervision.release(name)
        _say(f"cluster {self.cluster_name}: doubles to start afresh: {', '.join(sorted(names))}")

    def _start_doubles(self, *, only_missing: bool = False) -> None:
        """Start the registered doubles (those not running, with ``only_missing``) and wait
        until every one is healthy."""
        contexts = {d.name: self._double_context(d) for d in self.doubles}
        for double in self.doubles:
            if only_missing and doubles_host.running(double, self.supervision) is not None:
                continue
            if only_missing and any(s.name == double.name for s in self.supervision.table()):
                continue  # in the table but down: the supervisor is restarting it
            doubles_host.start(double, contexts[double.name], self.supervision)
        doubles_host.wait_healthy(
            self.doubles, contexts, self.supervision, timeout=doubles_host.READY_TIMEOUT
        )

    def _double_context(self, double: DoubleSpec) -> DoubleContext:
        return doubles_host.context(
            double, cluster_name=self.cluster_name, cluster_dir=self.cluster_dir
        )

    def down(self) -> None:
        """Stop the supervisor, the doubles and every process of the cluster (by pid), and
        remove its data and kwokctl files."""
        with self._lock():
            self._delete()
            for suffix in ("kwokctl.yaml", "kwokctl.log"):
                (self.workdir / f"{self.cluster_name}.{suffix}").unlink(missing_ok=True)

    def load_image(self, ref: str) -> None:
        """kwok nodes run no containers: there is nothing to load."""
        _say(f"local cluster: image {ref} not needed (kwok nodes run no containers)")

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
            _stop_pid(pid, component, grace=grace)
        return saved

    def start_component(self, saved: ProcessSpec, *, timeout: float = READY_TIMEOUT) -> int:
        """Start a component or double stopped by :meth:`stop_component` exactly as it ran
        (log appended, pid file updated, supervised again); wait until the cluster answers
        (a double: until it is healthy). The new pid. The leases its predecessor held are
        released first (:mod:`mochaos.cluster.leases`)."""
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

    def _double(self, name: str) -> DoubleSpec | None:
        return next((d for d in self.doubles if d.name == name), None)

    def dependency_checks(self) -> dict[str, Callable[[], str | None]]:
        """For each double (what runs beside the control plane for the operator): why it is
        unavailable now — not running as the supervisor's table says, restarted since the
        last look (a crash the supervisor mended between two probes), or failing its
        health check — or None (see :mod:`mochaos.observe.periods`)."""

        def check(double: DoubleSpec) -> Callable[[], str | None]:
            ctx = self._double_context(double)
            seen: list[int | None] = [None]

            def now() -> str | None:
                pid = doubles_host.running(double, self.supervision)
                before, seen[0] = seen[0], pid
                if pid is None:
                    return "not running"
                if before is not None and before != pid:
                    return f"restarted (pid {before} -> {pid})"
                return doubles_host.health(double, ctx)

            return now

        return {d.name: check(d) for d in self.doubles}

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

    def _double_problems(self) -> list[str]:
        return [f"double {d.name}: {p}" for d, p in self._double_health() if p is not None]

    def _double_health(self) -> list[tuple[DoubleSpec, str | None]]:
        out = []
        for double in self.doubles:
            if doubles_host.running(double, self.supervision) is None:
                out.append((double, "not running"))
            else:
                out.append((double, doubles_host.health(double, self._double_context(double))))
        return out

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

    # -- internals ---------------------------------------------------------

    def _env(self) -> dict[str, str]:
        paths = control_plane.binary_paths()
        bin_dirs = [str(paths["kubectl"].parent), str(paths["kwokctl"].parent)]
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([*bin_dirs, env.get("PATH", "")])
        env["KWOK_WORKDIR"] = str(self.workdir)
        env.pop("KUBECONFIG", None)
        return env

    def _config_file(self) -> Path:
        """The kwokctl configuration of a new cluster (written under the creation lock)."""
        paths = control_plane.binary_paths()
        options: dict[str, Any] = {
            "runtime": "binary",
            "bindAddress": "127.0.0.1",
            "kubeVersion": control_plane.KUBERNETES_VERSION,
            "etcdBinary": str(paths["etcd"]),
            "kubeApiserverBinary": str(paths["kube-apiserver"]),
            "kubeControllerManagerBinary": str(paths["kube-controller-manager"]),
            "kubeSchedulerBinary": str(paths["kube-scheduler"]),
            "kwokControllerBinary": str(paths["kwok"]),
            "kubectlBinary": str(paths["kubectl"]),
            "kubeAuditPolicy": str(self._audit_policy_file()),
        }
        if self.apiserver_port is not None:
            options["kubeApiserverPort"] = self.apiserver_port
        # Under the creation lock: no port another state folder's cluster records.
        options.update(ports.for_new_cluster(self.workdir, options))
        doc = {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokctlConfiguration",
            "options": options,
        }
        # A Stage list replaces kwok's defaults: the defaults come first, then ours.
        docs = [doc, *kwok_stages.documents(_default_stages())]
        path = self.workdir / f"{self.cluster_name}.kwokctl.yaml"
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        return path

    def _audit_policy_file(self) -> Path:
        path = self.workdir / "audit-policy.yaml"
        path.write_text(yaml.safe_dump(_AUDIT_POLICY, sort_keys=False))
        return path

    def _kwokctl(self, *args: str, timeout: float, config: Path | None = None) -> str:
        kwokctl = str(control_plane.binary_paths()["kwokctl"])
        cmd = [kwokctl, *(["-c", str(config)] if config else []), *args]
        log = self.workdir / f"{self.cluster_name}.kwokctl.log"
        try:
            proc = subprocess.run(
                cmd, env=self._env(), capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired as err:
            # What it printed before it was killed is the only account of where it hung.
            printed = _text(err.stdout) + _text(err.stderr)
            _log_command(log, cmd, printed, f"killed after {timeout:.0f}s")
            last = [ln.strip() for ln in printed.splitlines() if ln.strip()][-1:]
            raise InfraError(
                f"kwokctl {args[0]} {args[1] if len(args) > 1 else ''} timed out after "
                f"{timeout:.0f}s"
                + (f" (its last line: {log_line(last[0])})" if last else "")
                + self._component_tails(),
                hint=f"see {log} and {self.cluster_dir / 'logs'}",
            ) from err
        _log_command(log, cmd, proc.stdout + proc.stderr, f"exit {proc.returncode}")
        if proc.returncode != 0:
            last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise InfraError(
                f"kwokctl {' '.join(args[:2])} failed: {last[0][:200]}",
                hint=f"see {log} and {self.cluster_dir / 'logs'}",
            )
        return proc.stdout

    def _component_tails(self) -> str:
        """The last line each component logged, for an error that the cluster's removal
        would otherwise leave without its evidence."""
        tails = []
        for component in COMPONENTS:
            log = self.cluster_dir / "logs" / f"{component}.log"
            if log.exists():
                said = last_line(log, limit=4096)  # whole, for a JSON line to parse
                tails.append(f"{component}: {log_line(said) if said else '(empty log)'}")
        return "; last log lines: " + "; ".join(tails) if tails else ""

    def _create(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.creation_lock():
            self._create_alone()

    def creation_lock(self) -> FileLock:
        """Held while a cluster is created, machine-wide, across state folders
        (``MOCHAOS_STATE``) too: a new cluster's ports are chosen under it, none that another
        cluster records (:mod:`mochaos.cluster.ports`)."""
        return FileLock(str(machine_lock(CREATE_LOCK)), timeout=LOCK_TIMEOUT, mode=0o666)

    def _create_alone(self) -> None:
        if self.apiserver_port is not None:
            check_port_free(self.apiserver_port)
        _say(
            f"starting local cluster {self.cluster_name} (etcd, kube-apiserver, "
            f"controller-manager, scheduler, kwok) on 127.0.0.1"
        )
        config = self._config_file()
        self._kwokctl(
            "create",
            "cluster",
            "--name",
            self.cluster_name,
            "--kubeconfig",
            "",
            "--wait",
            f"{int(CREATE_TIMEOUT)}s",
            "--timeout",
            f"{int(CREATE_TIMEOUT)}s",
            timeout=CREATE_TIMEOUT + 30,
            config=config,
        )
        (self.cluster_dir / STAGES_DIGEST).write_text(_stages_digest() + "\n")
        self._kwokctl(
            "scale",
            "node",
            NODE_PREFIX,
            "--replicas",
            str(self.nodes),
            "--name",
            self.cluster_name,
            timeout=60,
        )
        self._apply_storage_class()

    def _apply_storage_class(self) -> None:
        """kwok's ``kwok-volume`` StorageClass, the default class: PVCs without a class get
        it on creation, and kwok's volume Stages provision and bind them."""
        from kubernetes import client, config

        body = storage_class(_default_stages())
        api = config.new_client_from_config(config_file=str(self.kubeconfig_path()))
        try:
            client.StorageV1Api(api).patch_storage_class(
                body["metadata"]["name"], body, field_manager="mochaos", force=True,
                _content_type="application/apply-patch+yaml", _request_timeout=10,
            )  # fmt: skip
        finally:
            api.close()

    def _delete(self) -> None:
        # The supervisor first: it would restart what is being stopped.
        self.supervision.stop()
        attached.stop_all(self.cluster_dir)
        doubles_host.stop_all(
            self.supervision, [s.name for s in self.supervision.table() if s.name not in COMPONENTS]
        )
        before = self.pids()
        if self.cluster_dir.exists() and control_plane.binary_paths()["kwokctl"].exists():
            try:
                self._kwokctl("delete", "cluster", "--name", self.cluster_name, timeout=60)
            except InfraError as err:
                _say(f"kwokctl delete failed ({err}); stopping processes by pid")
        for component, pid in before.items():
            _stop_pid(pid, component)
        if self.cluster_dir.exists():
            shutil.rmtree(self.cluster_dir, ignore_errors=True)

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

    def _cluster(self) -> Cluster:
        return Cluster(
            name=self.cluster_name,
            provider=self.name,
            kubeconfig=self.kubeconfig_path(),
            version=control_plane.KUBERNETES_VERSION,
            audit_log=self.cluster_dir / "logs" / "audit.log",
            state_dir=self.cluster_dir,
            events_log=self.events_log(),
        )


def _default_stages() -> Path:
    return control_plane.component("kwok-stages").path(DEFAULTS_FILE)


def _stages_digest() -> str:
    docs = kwok_stages.documents(_default_stages())
    return hashlib.sha256(yaml.safe_dump_all(docs, sort_keys=True).encode()).hexdigest()[:16]


def is_our_process(pid: int, component: str) -> bool:
    """True when pid is alive and its command line is the component's binary."""
    cmd = cmdline(pid)
    return bool(cmd) and component in Path(cmd[0]).name


def _stop_pid(pid: int, component: str, grace: float = 5.0) -> None:
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


def _log_command(log: Path, cmd: Sequence[str], output: str, end: str) -> None:
    """Append a command, what it printed and how it ended (``exit 0``, ``killed after …``)."""
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(cmd)}\n{output}\n({end})\n")


def log_line(line: str, limit: int = 200) -> str:
    """One log line made short: a JSON line (kwokctl's, kwok's) as its level, message and
    error; klog's and others' as they are; at most ``limit`` characters."""
    try:
        record = json.loads(line)
    except ValueError:
        record = None
    if isinstance(record, dict) and "msg" in record:
        parts = [str(record.get("level", "")), str(record["msg"])]
        parts += [f"{k}={record[k]}" for k in ("err", "error", "elapsed") if k in record]
        line = " ".join(p for p in parts if p)
    return line[:limit]


def _text(data: str | bytes | None) -> str:
    """A timed-out child's partial output, whichever type ``subprocess`` left it in."""
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data or ""
