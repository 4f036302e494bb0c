"""The embedded local cluster: a real control plane from cached Go-built binaries.

``kwokctl --runtime binary`` runs etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and the kwok controller as plain processes, every one pointed at
our cached binaries (kwokctl only downloads ``http(s)://`` sources), bound to
127.0.0.1, with our kubectl first on PATH (kwokctl prefers whatever kubectl it
finds) and an apiserver audit log. kwok's fake nodes make pods schedule, go
Running, and really disappear when deleted. ``MOCHAOS_CLUSTER_NAME`` picks
another cluster than ``mochaos`` and ``MOCHAOS_APISERVER_PORT`` fixes the
apiserver's port (kwokctl picks a free one otherwise).
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from filelock import FileLock

from mochaos.cluster import build
from mochaos.errors import InfraError, UsageError
from mochaos.paths import state_dir
from mochaos.procs import cmdline, wait_gone
from mochaos.progress import announce
from mochaos.types import Cluster

DEFAULT_NAME = "mochaos"
NAME_ENV = "MOCHAOS_CLUSTER_NAME"
PORT_ENV = "MOCHAOS_APISERVER_PORT"
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
              "kwok-controller")  # fmt: skip
DEFAULT_NODES = 3
NODE_PREFIX = "kwok-node"
CREATE_TIMEOUT = 180.0
READY_TIMEOUT = 60.0
LOCK_TIMEOUT = 3600.0

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


@dataclass(frozen=True)
class StoppedComponent:
    """How a stopped component of the local cluster was running, to start it again."""

    component: str
    argv: list[str]
    env: dict[str, str]
    cwd: str


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
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # The apiserver sets SO_REUSEADDR too: a port in TIME_WAIT is not taken.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as err:
            if err.errno != errno.EADDRINUSE:
                raise
            raise InfraError(
                f"apiserver port {port} on 127.0.0.1 is already in use",
                hint=f"free it (`ss -ltnp 'sport = :{port}'` shows the owner) or set "
                f"{PORT_ENV} to another port, or unset it for a random one",
            ) from err


class LocalProvider:
    """Starts, reuses and removes one named local cluster (see module docstring)."""

    name = "local"

    def __init__(
        self,
        *,
        name: str | None = None,
        nodes: int = DEFAULT_NODES,
        apiserver_port: int | None = None,
    ) -> None:
        """``name`` defaults to $MOCHAOS_CLUSTER_NAME or ``mochaos``; ``apiserver_port`` to
        $MOCHAOS_APISERVER_PORT or a free port kwokctl picks."""
        self.cluster_name = name or os.environ.get(NAME_ENV) or DEFAULT_NAME
        self.nodes = nodes
        self.apiserver_port = apiserver_port if apiserver_port is not None else _port_from_env()
        self.workdir = state_dir() / "kwok"
        self.cluster_dir = self.workdir / "clusters" / self.cluster_name

    # -- paths -------------------------------------------------------------

    def kubeconfig_path(self) -> Path:
        """The cluster's kubeconfig (exists once the cluster was created)."""
        return self.cluster_dir / "kubeconfig.yaml"

    def audit_log(self) -> Path | None:
        """The apiserver audit log (JSON lines of audit.k8s.io/v1 Events)."""
        path = self.cluster_dir / "logs" / "audit.log"
        return path if path.exists() else None

    def _lock(self) -> FileLock:
        self.workdir.mkdir(parents=True, exist_ok=True)
        # Long enough for a cold build by another process (xdist workers share one cluster).
        return FileLock(str(self.workdir / f"{self.cluster_name}.lock"), timeout=LOCK_TIMEOUT)

    # -- lifecycle ---------------------------------------------------------

    def up(self) -> Cluster:
        """Start the cluster or reuse a healthy one; build binaries on first use."""
        with self._lock():
            if not build.all_built():
                build.build()
            if self.cluster_dir.exists():
                if self.is_healthy():
                    return self._cluster()
                _say(f"cluster {self.cluster_name} exists but is not healthy; recreating it")
                self._delete()
            t0 = time.monotonic()
            self._create()
            self._wait_ready(READY_TIMEOUT)
            _say(f"cluster {self.cluster_name} ready in {time.monotonic() - t0:.1f}s")
            return self._cluster()

    def down(self) -> None:
        """Stop every process of the cluster (by pid) and remove its data and kwokctl files."""
        with self._lock():
            self._delete()
            for suffix in ("kwokctl.yaml", "kwokctl.log"):
                (self.workdir / f"{self.cluster_name}.{suffix}").unlink(missing_ok=True)

    def load_image(self, ref: str) -> None:
        """kwok nodes run no containers: there is nothing to load."""
        _say(f"local cluster: image {ref} not needed (kwok nodes run no containers)")

    # -- one component -----------------------------------------------------

    def stop_component(self, component: str, *, grace: float = 5.0) -> StoppedComponent:
        """Stop one running component (by its pid file, command line checked; SIGKILL after
        ``grace`` seconds) and return how it ran, for :meth:`start_component`; the rest of
        the cluster keeps running. An apiserver down for over ~10 s makes the scheduler and
        controller-manager lose their leases and exit."""
        if component not in COMPONENTS:
            raise UsageError(
                f"unknown component {component!r}", hint=f"use one of: {', '.join(COMPONENTS)}"
            )
        pid = self.running_pids().get(component)
        if pid is None:
            raise InfraError(
                f"{component} of cluster {self.cluster_name} is not running",
                hint="start the cluster first (python -m mochaos cluster up)",
            )
        proc = Path(f"/proc/{pid}")
        try:
            environ = proc.joinpath("environ").read_bytes().split(b"\0")
            saved = StoppedComponent(
                component=component,
                argv=cmdline(pid),
                env=dict(e.decode(errors="replace").split("=", 1) for e in environ if b"=" in e),
                cwd=os.readlink(proc / "cwd"),
            )
        except OSError as err:
            raise InfraError(
                f"cannot read how {component} (pid {pid}) runs: {err.strerror}",
                hint="mo-chaos must run as the user that started the cluster",
            ) from err
        _stop_pid(pid, component, grace=grace)
        return saved

    def start_component(self, saved: StoppedComponent, *, timeout: float = READY_TIMEOUT) -> int:
        """Start a component stopped by :meth:`stop_component` exactly as it ran (log appended,
        pid file updated); wait until the cluster answers again. Returns the new pid."""
        log = self.cluster_dir / "logs" / f"{saved.component}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                saved.argv,
                env=saved.env,
                cwd=saved.cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        (self.cluster_dir / "pids" / f"{saved.component}.pid").write_text(f"{proc.pid}\n")
        self._wait_ready(timeout)
        return proc.pid

    # -- health ------------------------------------------------------------

    def pids(self) -> dict[str, int]:
        """Component name -> pid, from kwokctl's pid files."""
        out: dict[str, int] = {}
        for f in sorted((self.cluster_dir / "pids").glob("*.pid")):
            try:
                out[f.stem] = int(f.read_text().strip())
            except ValueError:
                continue
        return out

    def running_pids(self) -> dict[str, int]:
        """The subset of :meth:`pids` whose process is alive and is the binary we started."""
        return {c: p for c, p in self.pids().items() if is_our_process(p, c)}

    def is_healthy(self) -> bool:
        """True when every component runs, the API answers and enough nodes are Ready."""
        if not self.kubeconfig_path().exists():
            return False
        if len(self.running_pids()) < 5:
            return False
        try:
            return self._ready_nodes(timeout=3) >= self.nodes
        except Exception:
            return False

    def status(self) -> str:
        """One line describing the cluster."""
        if not self.cluster_dir.exists():
            return f"cluster {self.cluster_name}: not created"
        running = self.running_pids()
        try:
            ready = self._ready_nodes(timeout=3)
            api = "API ready"
        except Exception as err:
            ready, api = 0, f"API unreachable ({type(err).__name__})"
        return (
            f"cluster {self.cluster_name}: {len(running)}/5 processes, {api}, "
            f"{ready} nodes Ready, kubeconfig {self.kubeconfig_path()}"
        )

    # -- internals ---------------------------------------------------------

    def _env(self) -> dict[str, str]:
        paths = build.binary_paths()
        bin_dirs = [str(paths["kubectl"].parent), str(paths["kwokctl"].parent)]
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([*bin_dirs, env.get("PATH", "")])
        env["KWOK_WORKDIR"] = str(self.workdir)
        env.pop("KUBECONFIG", None)
        return env

    def _config_file(self) -> Path:
        paths = build.binary_paths()
        options: dict[str, Any] = {
            "runtime": "binary",
            "bindAddress": "127.0.0.1",
            "kubeVersion": build.KUBERNETES_VERSION,
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
        doc = {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokctlConfiguration",
            "options": options,
        }
        path = self.workdir / f"{self.cluster_name}.kwokctl.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    def _audit_policy_file(self) -> Path:
        path = self.workdir / "audit-policy.yaml"
        path.write_text(yaml.safe_dump(_AUDIT_POLICY, sort_keys=False))
        return path

    def _kwokctl(self, *args: str, timeout: float, config: Path | None = None) -> str:
        kwokctl = str(build.binary_paths()["kwokctl"])
        cmd = [kwokctl, *(["-c", str(config)] if config else []), *args]
        log = self.workdir / f"{self.cluster_name}.kwokctl.log"
        try:
            proc = subprocess.run(
                cmd, env=self._env(), capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired as err:
            raise InfraError(
                f"kwokctl {args[0]} {args[1] if len(args) > 1 else ''} timed out after "
                f"{timeout:.0f}s",
                hint=f"see {log} and {self.cluster_dir / 'logs'}",
            ) from err
        with log.open("a", encoding="utf-8") as fh:
            fh.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}\n(exit {proc.returncode})\n")
        if proc.returncode != 0:
            last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise InfraError(
                f"kwokctl {' '.join(args[:2])} failed: {last[0][:200]}",
                hint=f"see {log} and {self.cluster_dir / 'logs'}",
            )
        return proc.stdout

    def _create(self) -> None:
        if self.apiserver_port is not None:
            check_port_free(self.apiserver_port)
        self.workdir.mkdir(parents=True, exist_ok=True)
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

    def _delete(self) -> None:
        before = self.pids()
        if self.cluster_dir.exists() and build.binary_paths()["kwokctl"].exists():
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

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            try:
                ready = self._ready_nodes(timeout=3)
                if ready >= self.nodes:
                    return
                last = f"{ready}/{self.nodes} nodes Ready"
            except Exception as err:
                last = f"API not answering ({type(err).__name__})"
            time.sleep(0.2)
        raise InfraError(
            f"local cluster not ready after {timeout:.0f}s: {last}",
            hint=f"see the component logs in {self.cluster_dir / 'logs'}",
        )

    def _cluster(self) -> Cluster:
        return Cluster(
            name=self.cluster_name,
            provider=self.name,
            kubeconfig=self.kubeconfig_path(),
            version=build.KUBERNETES_VERSION,
            audit_log=self.cluster_dir / "logs" / "audit.log",
            state_dir=self.cluster_dir,
        )


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
