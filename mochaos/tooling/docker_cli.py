"""The ``docker`` CLI for containers mo-chaos runs itself: create, start, stop, freeze, inspect.

Every container is handled by the id ``docker create`` printed, never by a name or a
pattern. The engine is the one the CLI reaches from our environment (``DOCKER_HOST``,
else the default socket); it is recorded with each container so that whoever stops the
container later (another pytest process, the reaper) reaches the same engine.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mochaos.errors import InfraError, UsageError
from mochaos.tooling.runner import Result, Runner, SubprocessRunner, reason

ENGINE_ENV = "DOCKER_HOST"
"""The variable that chooses the engine the docker CLI talks to."""
PROBE_TIMEOUT = 20.0
"""Seconds ``docker version`` may take before the engine counts as unreachable."""


def daemon_reason(result: Result) -> str:
    """Why the engine refused a command: its ``Error response from daemon:`` line (the CLI's
    own last line, e.g. "failed to start containers", says less), else the last line."""
    lines = (result.stderr + result.stdout).strip().splitlines()
    daemon = [ln.split("from daemon: ", 1)[1] for ln in lines if "from daemon: " in ln]
    return (daemon or lines or [f"exit {result.returncode}"])[0][:300]


@dataclass(frozen=True, slots=True)
class ContainerState:
    """What ``docker inspect`` says of a container's process."""

    status: str
    """created, running, paused, restarting, removing, exited or dead."""
    exit_code: int
    error: str = ""

    @property
    def alive(self) -> bool:
        """True while the container's process exists (a paused one included)."""
        return self.status in ("running", "paused", "restarting")


class DockerCli:
    """The docker CLI bound to one engine; every call goes through ``runner`` (logged)."""

    def __init__(
        self,
        *,
        path: str = "docker",
        engine: str | None = None,
        runner: Runner | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.path = path
        self.engine = engine
        extra = {ENGINE_ENV: engine} if engine else None
        self.runner: Runner = runner or SubprocessRunner(
            progress=None, log_path=log_path, env=extra
        )

    @classmethod
    def find(cls, *, log_path: Path | None = None, runner: Runner | None = None) -> DockerCli:
        """The docker CLI on PATH, bound to the engine our environment names; UsageError
        (one line) when there is no CLI."""
        path = shutil.which("docker")
        if path is None:
            raise UsageError(
                "docker not found on PATH",
                hint="install Docker Engine (Debian: apt-get install docker.io) and start it",
            )
        return cls(path=path, engine=os.environ.get(ENGINE_ENV), runner=runner, log_path=log_path)

    def environment(self) -> dict[str, str]:
        """The environment a long-running docker child (``logs -f``) needs for this engine."""
        env = dict(os.environ)
        if self.engine:
            env[ENGINE_ENV] = self.engine
        return env

    def _run(self, *args: str, what: str, check: bool = True, timeout: float = 120.0) -> Result:
        return self.runner([self.path, *args], what=what, check=check, timeout=timeout)

    def server_version(self) -> str:
        """The engine's version; UsageError (one line, with the CLI's reason) when no engine
        answers."""
        try:
            result = self._run(
                "version", "--format", "{{.Server.Version}}", what="docker version",
                check=False, timeout=PROBE_TIMEOUT,
            )  # fmt: skip
        except InfraError as err:  # the engine hangs
            result = Result((self.path, "version"), 1, stderr=str(err))
        version = result.stdout.strip()
        if result.returncode != 0 or not version:
            raise UsageError(
                f"no Docker engine reachable ({reason(result)})",
                hint=f"start Docker (dockerd), or point {ENGINE_ENV} at a running engine",
            )
        return version

    def image_id(self, ref: str) -> str | None:
        """The id of ``ref`` in the engine's image store (None when it is not there)."""
        result = self._run("image", "inspect", "--format", "{{.Id}}", ref,
                           what=f"docker image inspect {ref}", check=False)  # fmt: skip
        return (result.stdout.strip() or None) if result.returncode == 0 else None

    def inspect_image(self, ref: str, template: str) -> str:
        """``docker image inspect --format <template>`` of ``ref``; InfraError when absent."""
        return self._run("image", "inspect", "--format", template, ref,
                         what=f"docker image inspect {ref}").stdout.strip()  # fmt: skip

    def image_labels(self, ref: str) -> dict[str, str] | None:
        """The labels of ``ref`` in the engine's image store (None when it is not there)."""
        result = self._run(
            "image",
            "inspect",
            "--format",
            "{{json .Config.Labels}}",
            ref,
            what=f"docker image inspect {ref}",
            check=False,
        )
        if result.returncode != 0:
            return None
        return dict(json.loads(result.stdout) or {})

    def load(self, archive: Path) -> None:
        """``docker load`` of an image archive (``docker save``'s format)."""
        self._run(
            "load", "--input", str(archive), what=f"docker load {archive.name}", timeout=900.0
        )

    def pull(self, ref: str) -> None:
        """Pull ``ref`` into the engine."""
        self.runner([self.path, "pull", ref], what=f"docker pull {ref}", timeout=1800.0,
                    hint="build or load the image into this engine, or check its name")  # fmt: skip

    def tag(self, ref: str, new_ref: str) -> None:
        """Give the image ``ref`` the further name ``new_ref``."""
        self._run("tag", ref, new_ref, what=f"docker tag {ref} {new_ref}")

    def push(self, ref: str) -> None:
        """Push ``ref`` to the registry its name starts with."""
        self.runner([self.path, "push", ref], what=f"docker push {ref}", timeout=1800.0,
                    hint="check that the registry runs and accepts pushes")  # fmt: skip

    def untag(self, ref: str) -> None:
        """Remove the name ``ref`` (the image stays while other names hold it)."""
        self._run("rmi", ref, what=f"docker rmi {ref}", check=False)

    def create(self, args: Sequence[str]) -> str:
        """``docker create <args>``: the new container's id."""
        result = self._run("create", *args, what="docker create")
        cid = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
        if not cid:
            raise InfraError("docker create printed no container id", hint="see the docker log")
        return cid

    def start(self, cid: str) -> Result:
        """``docker start``; the result is returned unchecked (the caller names the failure)."""
        return self._run("start", cid, what=f"docker start {cid[:12]}", check=False)

    def state(self, cid: str) -> ContainerState | None:
        """The container's state (None when the engine no longer knows it)."""
        result = self._run("inspect", "--type", "container", "--format", "{{json .State}}", cid,
                           what=f"docker inspect {cid[:12]}", check=False)  # fmt: skip
        if result.returncode != 0:
            return None
        data = json.loads(result.stdout)
        return ContainerState(str(data.get("Status") or ""), int(data.get("ExitCode") or 0),
                              str(data.get("Error") or ""))  # fmt: skip

    def stop(self, cid: str, grace: float) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds (a paused container is thawed first)."""
        state = self.state(cid)
        if state is None or not state.alive:
            return
        if state.status == "paused":
            self._run("unpause", cid, what=f"docker unpause {cid[:12]}")
        self._run("stop", "--time", str(max(0, round(grace))), cid,
                  what=f"docker stop {cid[:12]}", timeout=grace + 60)  # fmt: skip

    def remove(self, cid: str) -> None:
        """Remove the container, running or not (absent is fine)."""
        result = self._run("rm", "--force", cid, what=f"docker rm {cid[:12]}", check=False)
        if result.returncode != 0 and "No such container" not in result.stderr:
            raise InfraError(f"docker rm {cid[:12]} failed: {reason(result)}",
                             hint="remove it by hand: docker rm -f " + cid)  # fmt: skip

    def kill(self, cid: str) -> None:
        """SIGKILL the container's process (a paused one is thawed first: the engine refuses
        to signal a frozen container)."""
        state = self.state(cid)
        if state is None or not state.alive:
            return
        if state.status == "paused":
            self._run("unpause", cid, what=f"docker unpause {cid[:12]}")
        self._run("kill", cid, what=f"docker kill {cid[:12]}")

    def pause(self, cid: str) -> None:
        """Freeze every process of the container (the cgroup freezer)."""
        self._run("pause", cid, what=f"docker pause {cid[:12]}")

    def unpause(self, cid: str) -> None:
        """Thaw a frozen container (a container that is not paused is left as it is)."""
        state = self.state(cid)
        if state is not None and state.status == "paused":
            self._run("unpause", cid, what=f"docker unpause {cid[:12]}")

    def inspect(self, cid: str, template: str) -> str:
        """``docker inspect --format <template>`` of a container; InfraError when it is gone."""
        result = self._run(
            "inspect",
            "--type",
            "container",
            "--format",
            template,
            cid,
            what=f"docker inspect {cid[:12]}",
        )
        return result.stdout.strip()

    def address(self, cid: str, network: str) -> str:
        """The container's IP address on ``network`` ('' when it is not attached)."""
        networks = json.loads(self.inspect(cid, "{{json .NetworkSettings.Networks}}") or "{}")
        return str((networks.get(network) or {}).get("IPAddress") or "")

    def published(self, cid: str, port: int) -> tuple[str, int]:
        """(host, port) where the engine publishes the container's TCP ``port``."""
        out = self._run("port", cid, f"{port}/tcp", what=f"docker port {cid[:12]} {port}").stdout
        host, _, number = out.strip().splitlines()[0].rpartition(":")
        return host.strip("[]") or "127.0.0.1", int(number)

    def network_create(
        self, name: str, *, labels: dict[str, str], bridge: str = "", subnet: str = ""
    ) -> str:
        """Create a bridge network (its host interface named ``bridge`` when given); its
        subnet. Without ``subnet`` the engine picks one, and the network is made again
        with it named, since only a network created with a subnet lets containers have
        fixed addresses (``--ip``)."""
        argv = ["network", "create", *(f"--label={k}={v}" for k, v in labels.items())]
        if bridge:
            argv.append(f"--opt=com.docker.network.bridge.name={bridge}")
        if subnet:
            self._run(*argv, f"--subnet={subnet}", name, what=f"docker network create {name}")
            return subnet
        self._run(*argv, name, what=f"docker network create {name}")
        picked = self._run(
            "network",
            "inspect",
            "--format",
            "{{(index .IPAM.Config 0).Subnet}}",
            name,
            what=f"docker network inspect {name}",
        ).stdout.strip()
        self.network_remove(name)
        return self.network_create(name, labels=labels, bridge=bridge, subnet=picked)

    def network_remove(self, name: str) -> None:
        """Remove a network (absent is fine)."""
        result = self._run("network", "rm", name, what=f"docker network rm {name}", check=False)
        if result.returncode != 0 and "not found" not in result.stderr:
            raise InfraError(
                f"docker network rm {name} failed: {reason(result)}",
                hint="remove its containers first: docker network inspect " + name,
            )

    def logs(self, cid: str) -> str:
        """Everything the container printed so far (stdout and stderr)."""
        result = self._run("logs", cid, what=f"docker logs {cid[:12]}", check=False)
        return result.stdout + result.stderr

    def logs_argv(self, cid: str) -> list[str]:
        """The command that follows a container's output until it stops."""
        return [self.path, "logs", "--follow", cid]
