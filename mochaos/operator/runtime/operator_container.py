"""The operator's image run as a Docker container on this machine, one per test namespace.

A manager in a container gets what
:class:`~mochaos.operator.runtime.manager_launch.ManagerLaunch` writes for the process (the
operator's config directory, the one-context kubeconfig, free metrics and probe ports,
``POD_NAMESPACE``, ``ENABLE_WEBHOOKS``), mounted at the same paths, so the flags are the
process's flags. It joins the host's network, as the process does, and sees the namespace's
MatrixOne names through the MatrixOne double's hosts file bind-mounted over ``/etc/hosts``.
Its output is followed with ``docker logs --follow`` into the test's ``operator.log``; stop,
kill and pause go to the container's id.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mochaos import exits
from mochaos.cluster.local.attached import Attached
from mochaos.errors import InfraError, UsageError
from mochaos.interpose.proxy import Interposer
from mochaos.kube import Cluster
from mochaos.kubeconfig import referenced_files
from mochaos.operator.runtime.manager_launch import ManagerLaunch, ready_in_log
from mochaos.operator.target import MatrixOneFaults, PoolSpec, Sessions, Waits
from mochaos.runstate import register_container, unregister_container
from mochaos.tooling.docker_cli import ENGINE_ENV, DockerCli, daemon_reason
from mochaos.tooling.followed_files import follow_file, log_size, read_lines, tail

DEFAULT_ENTRYPOINT = "/manager"
"""The manager's path in the operator's image: its Dockerfile's ``ENTRYPOINT ["/manager"]``
and its chart's ``command: [/manager]`` (matrixone-operator 2301e3b, ``Dockerfile``,
``charts/matrixone-operator/templates/deployment.yaml``)."""
LABEL_PREFIX = "mochaos.io/"
STOP_GRACE = 5.0


@dataclass(frozen=True)
class Mount:
    """A host path bind-mounted into the container."""

    source: Path
    target: Path
    readonly: bool = True

    def option(self) -> str:
        """The ``--mount`` value (which, unlike ``--volume``, fails on a missing source)."""
        ro = ",readonly" if self.readonly else ""
        return f"type=bind,source={self.source},target={self.target}{ro}"


@dataclass(frozen=True)
class ContainerSpec:
    """One manager container: everything ``docker create`` needs."""

    image: str
    entrypoint: str
    args: tuple[str, ...]
    env: dict[str, str]
    mounts: tuple[Mount, ...]
    labels: dict[str, str] = field(default_factory=dict)
    user: str = field(default_factory=lambda: f"{os.getuid()}:{os.getgid()}")
    """Our own uid: the mounted kubeconfig and its key stay readable by us only (the
    image's own user, 65532, could not read them)."""

    def create_args(self) -> list[str]:
        """The arguments of ``docker create``."""
        out = ["--network", "host", "--user", self.user, "--log-driver", "json-file"]
        for key, value in sorted(self.labels.items()):
            out += ["--label", f"{LABEL_PREFIX}{key}={value}"]
        for key, value in self.env.items():
            out += ["--env", f"{key}={value}"]
        for mount in self.mounts:
            out += ["--mount", mount.option()]
        return [*out, "--entrypoint", self.entrypoint, self.image, *self.args]


def manager_container(
    launch: ManagerLaunch,
    cluster: Cluster,
    *,
    image: str,
    extra_args: Sequence[str] = (),
    extra_mounts: Sequence[Mount] = (),
    labels: dict[str, str] | None = None,
) -> ContainerSpec:
    """The container running ``launch``'s manager: its files written, mounted where the
    process would read them; the hosts file (if any) over ``/etc/hosts``.

    The hosts file is mounted rather than given as ``--add-host`` entries: the MatrixOne
    double adds a namespace's names once its LogSet exists, after the manager started, and
    rewrites the file in place (same inode), which a bind mount follows.
    """
    args, env = launch.configure(cluster)
    kubeconfig = Path(env["KUBECONFIG"])
    mounts = [Mount(launch.workdir, launch.workdir, readonly=False)]
    mounts += [Mount(f, f) for f in dict.fromkeys(referenced_files(kubeconfig))]
    if launch.hosts_file is not None:
        mounts.append(Mount(launch.hosts_file, Path("/etc/hosts")))
    mounts += extra_mounts
    return ContainerSpec(
        image=image, entrypoint=str(launch.binary), args=(*args, *extra_args), env=env,
        mounts=tuple(mounts), labels={"cluster": cluster.name, **(labels or {})},
    )  # fmt: skip


def start_container(docker: DockerCli, spec: ContainerSpec, *, what: str, reap: bool) -> str:
    """``docker create`` + ``docker start``: the running container's id. With ``reap`` it is
    registered for the reaper (a container this process alone owns). A start the engine
    refuses is one line; a missing entrypoint says which option names another."""
    cid = docker.create(spec.create_args())
    if reap:
        register_container(cid, docker.engine)
    result = docker.start(cid)
    if result.returncode == 0:
        return cid
    docker.remove(cid)
    unregister_container(cid)
    why = daemon_reason(result)
    if spec.entrypoint in why and ("no such file" in why or "not found" in why):
        raise UsageError(
            f"{what}: image {spec.image} has no {spec.entrypoint} ({why})",
            hint="name the manager's path in the image with --operator-entrypoint",
        )
    raise InfraError(f"{what}: docker start failed: {why}", hint="see docker's log")


def follow_output(docker: DockerCli, cid: str, log_path: Path) -> subprocess.Popen[bytes]:
    """``docker logs --follow`` appending the container's output to ``log_path``; the
    follower ends when the container stops."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as out:
        return subprocess.Popen(
            docker.logs_argv(cid), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=docker.environment(), start_new_session=True,
        )  # fmt: skip


class OperatorContainer:
    """One manager container for one namespace; implements
    :class:`mochaos.operator.target.RunningOperator`.

    Each :meth:`start` runs a new container from ``spec`` (a restart is a new container, as
    a restarted pod is); the log keeps growing across them.
    """

    def __init__(
        self,
        *,
        docker: DockerCli,
        spec: ContainerSpec,
        target: str,
        version: str,
        user_agent: str,
        log_path: Path,
        ready_timeout: float,
        sessions: Sessions,
        waits: Waits,
        ready: Callable[[Sequence[str]], bool] = ready_in_log,
        pool_spec: PoolSpec | None = None,
        interposer: Interposer | None = None,
        matrixone: MatrixOneFaults | None = None,
    ) -> None:
        self.docker = docker
        self.spec = spec
        self.target = target
        self.version = version
        self.user_agent = user_agent
        self.log_path = log_path
        self.sessions = sessions
        self.waits = waits
        self.pool_spec = pool_spec
        self.matrixone = matrixone
        self.interposer = interposer
        """The interposer between this operator and the apiserver (None: direct)."""
        self._ready = ready
        self._ready_timeout = ready_timeout
        self._cid: str | None = None
        self._follower: subprocess.Popen[bytes] | None = None
        self._log_offset = 0
        self._resume: threading.Timer | None = None
        self._lock = threading.RLock()
        self.starts = 0

    @property
    def container_id(self) -> str | None:
        """The current container's id (None once removed)."""
        return self._cid

    def start(self) -> None:
        """Run a new container (log appended) and wait until the manager is ready."""
        with self._lock:
            self._log_offset = log_size(self.log_path)
            self._cid = start_container(
                self.docker, self.spec, what=f"operator {self.target}", reap=True
            )
            self._follower = follow_output(self.docker, self._cid, self.log_path)
            self.starts += 1
        deadline = time.monotonic() + self._ready_timeout
        while time.monotonic() < deadline:
            if self._ready(self.log_lines()):
                return
            if self._follower.poll() is not None:
                self._exited_before_ready()
            time.sleep(0.05)
        self.stop()
        raise InfraError(
            f"operator {self.target} not ready after {self._ready_timeout:.0f}s",
            hint=f"see its log {self.log_path}",
        )

    def _exited_before_ready(self) -> None:
        state = self.docker.state(self._cid) if self._cid else None
        if state is not None and state.alive:
            return  # the follower ended for another reason; keep waiting on the log
        self.stop()
        tail_line = tail(self.log_lines(), 1) or (state.error if state else "") or "no output"
        rc = state.exit_code if state else -1
        if rc == exits.USAGE:
            raise UsageError(f"operator {self.target} refused its arguments: {tail_line}")
        raise InfraError(
            f"operator {self.target} exited with status {rc} before it was ready: {tail_line}",
            hint=f"see {self.log_path}",
        )

    def log_lines(self) -> list[str]:
        """The lines the current container logged so far."""
        return read_lines(self.log_path, self._log_offset)

    def stop(self, grace: float = STOP_GRACE) -> None:
        """Thaw, SIGTERM, SIGKILL after ``grace`` seconds, remove the container, stop its
        interposer; idempotent."""
        self._halt(grace)
        if self.interposer is not None:
            self.interposer.stop()

    def _halt(self, grace: float = STOP_GRACE) -> None:
        """Thaw, SIGTERM, SIGKILL after ``grace`` seconds, remove the container."""
        with self._lock:
            if self._resume:
                self._resume.cancel()
            cid, self._cid = self._cid, None
            if cid is None:
                return
            try:
                self.docker.stop(cid, grace)
                self.docker.remove(cid)
            finally:
                unregister_container(cid)
                self._end_follower()

    def _end_follower(self) -> None:
        follower, self._follower = self._follower, None
        if follower is None:
            return
        try:
            follower.wait(timeout=5)
        except subprocess.TimeoutExpired:
            follower.kill()
            follower.wait()

    def kill(self) -> None:
        """SIGKILL the manager; the container stays down (until :meth:`restart`)."""
        with self._lock:
            if self._resume:
                self._resume.cancel()
            if self._cid is not None:
                self.docker.kill(self._cid)

    def restart(self) -> None:
        """Stop (gracefully) and start a new container; the log keeps growing, the
        interposer stays."""
        self._halt()
        self.start()

    def pause(self, seconds: float) -> None:
        """Freeze the container now (``docker pause``) and thaw it after ``seconds``."""
        with self._lock:
            state = self.docker.state(self._cid) if self._cid else None
            if self._cid is None or state is None or state.status != "running":
                raise InfraError(f"cannot pause operator {self.target}: it is not running")
            self.docker.pause(self._cid)
            self._resume = threading.Timer(seconds, self.resume)
            self._resume.daemon = True
            self._resume.start()

    def resume(self) -> None:
        """Thaw a paused container (no-op when it is not paused or gone)."""
        with self._lock:
            if self._cid is not None:
                self.docker.unpause(self._cid)

    def follow_log(self, stop: threading.Event) -> Iterator[str]:
        """Yield log lines from the start of the file until ``stop`` is set."""
        return follow_file(self.log_path, stop)


@dataclass(frozen=True)
class ContainerHost:
    """The shared webhook host run as a container (see :mod:`mochaos.operator.webhooks.host`)."""

    cid: str
    engine: str | None

    def _docker(self) -> DockerCli:
        """The CLI bound to the engine the host runs on (None: the one our environment names)."""
        return DockerCli(engine=self.engine or os.environ.get(ENGINE_ENV))

    def alive(self) -> bool:
        """True while the container runs (frozen included)."""
        state = self._docker().state(self.cid)
        return state is not None and state.alive

    def stop(self) -> None:
        """docker stop (10 s grace) and rm, by id."""
        docker = self._docker()
        docker.stop(self.cid, 10.0)
        docker.remove(self.cid)

    def record(self) -> dict[str, Any]:
        """``kind: container``, its id and engine."""
        return {"kind": "container", "id": self.cid, "engine": self.engine}

    def attachment(self, name: str) -> Attached:
        """``docker rm --force`` by id, on its engine (a stop that outlives this process)."""
        env = {ENGINE_ENV: self.engine} if self.engine else None
        return Attached(name, stop=["docker", "rm", "--force", self.cid], env=env)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> ContainerHost:
        """The handle ``host.json`` describes."""
        return cls(str(record["id"]), record.get("engine"))
