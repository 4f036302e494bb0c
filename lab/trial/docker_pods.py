"""Planned pods run as Docker containers on one network whose DNS gives them their cluster names.

Each pod is a container with the pod's name as host name, a fixed address (its pod IP,
which the start scripts write into MatrixOne's config before it runs), one network alias
per cluster DNS name (Docker's embedded DNS answers them, so the start scripts'
``nslookup`` waits work as in a cluster), its ConfigMap volumes as read-only bind mounts of
files written here, its claims as empty folders, its memory limit, and the pod's command
as entrypoint. Containers are registered for the reaper, handled by id, and removed with
the network by :meth:`DockerPods.close`.
"""

from __future__ import annotations

import ipaddress
import shutil
from collections.abc import Iterator
from pathlib import Path

from mochaos.errors import InfraError
from mochaos.runstate import register_container, unregister_container
from mochaos.tooling.docker_cli import DockerCli, daemon_reason
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.runner import SubprocessRunner

from trial.forwarding import accept_bridge, nothing
from trial.pods import PodRun

LABEL = "mochaos.io/trial"
FIRST_HOST = 10
"""Addresses below .10 of the network are left to the gateway and to what joins it later."""


class DockerPods:
    """The containers of one trial, on their own network."""

    def __init__(
        self, docker: DockerCli, *, name: str, workdir: Path, progress: Progress = say
    ) -> None:
        self.docker = docker
        self.name = name
        self.network = f"mochaos-trial-{name}"
        self.bridge = f"mtr{name}"[:15]
        self.workdir = workdir
        self.progress = progress
        self.containers: dict[str, str] = {}
        self._subnet = ""
        self._undo_forwarding = nothing

    def create_network(self) -> Iterator[str]:
        """Create the network (and let its traffic through where the host would drop it:
        :mod:`.forwarding`); the addresses pods may take, in order."""
        self._subnet = self.docker.network_create(
            self.network, labels={LABEL: self.name}, bridge=self.bridge
        )
        self._undo_forwarding = accept_bridge(
            self.bridge, runner=SubprocessRunner(progress=None), progress=self.progress
        )
        hosts = ipaddress.ip_network(self._subnet).hosts()
        return (str(ip) for i, ip in enumerate(hosts, 1) if i >= FIRST_HOST)

    def create_args(self, pod: PodRun) -> list[str]:
        """``docker create`` arguments of one pod (its files written first)."""
        args = ["--name", f"{self.network}-{pod.name}", "--hostname", pod.name,
                "--network", self.network, "--ip", pod.ip, "--label", f"{LABEL}={self.name}",
                "--log-driver", "json-file"]  # fmt: skip
        for name in pod.names:
            args += ["--network-alias", name]
        for key, value in pod.env.items():
            args += ["--env", f"{key}={value}"]
        for mount in pod.mounts:
            source = self.workdir / pod.name / mount.volume
            source.mkdir(parents=True, exist_ok=True)
            for file, content in (mount.files or {}).items():
                (source / file).write_text(content)
            ro = ",readonly" if mount.readonly else ""
            args += ["--mount", f"type=bind,source={source},target={mount.path}{ro}"]
        if pod.memory_limit:
            args += ["--memory", str(pod.memory_limit)]
        return [*args, "--entrypoint", pod.command[0], pod.image, *pod.command[1:]]

    def start(self, pod: PodRun) -> str:
        """Create and start the pod's container; its id."""
        cid = self.docker.create(self.create_args(pod))
        register_container(cid, self.docker.engine)
        self.containers[pod.name] = cid
        started = self.docker.start(cid)
        if started.returncode != 0:
            raise InfraError(
                f"trial: pod {pod.name} did not start: {daemon_reason(started)}",
                hint=f"docker logs {cid[:12]}",
            )
        return cid

    def pid(self, pod: str) -> int:
        """The host pid of the pod's main process (0 when it is not running)."""
        return int(self.docker.inspect(self.containers[pod], "{{.State.Pid}}") or 0)

    def logs(self, pod: str) -> str:
        """What the pod's container printed."""
        return self.docker.logs(self.containers[pod])

    def save_logs(self, directory: Path) -> None:
        """Write each pod's output to ``<directory>/<pod>.log`` (evidence before removal)."""
        directory.mkdir(parents=True, exist_ok=True)
        for pod, cid in self.containers.items():
            (directory / f"{pod}.log").write_text(self.docker.logs(cid))

    def close_containers(self) -> None:
        """Remove every pod's container."""
        for cid in self.containers.values():
            self.docker.remove(cid)
            unregister_container(cid)
        self.containers.clear()

    def close(self) -> None:
        """Remove every container, the network (once nothing else is on it) and the files."""
        self.close_containers()
        if self._subnet:
            self.docker.network_remove(self.network)
            self._subnet = ""
        self._undo_forwarding()
        self._undo_forwarding = nothing
        shutil.rmtree(self.workdir, ignore_errors=True)
