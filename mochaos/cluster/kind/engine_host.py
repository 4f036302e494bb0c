"""Start and stop a Docker daemon for kind on this machine, with what the host needs.

``python -m mochaos kind engine up`` starts ``dockerd`` on the default socket
when none answers there (pid file, log and shim under ``<state>/engine/``),
registering the runtime shim as its default runtime only where the host's
capability bounding set needs it (:mod:`mochaos.cluster.kind.host_facts`), and
says why. ``down`` stops the daemon it started, by pid, never another one.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from mochaos.cluster.kind import runtime_shim
from mochaos.cluster.kind.host_facts import HostFacts
from mochaos.errors import InfraError
from mochaos.paths import state_dir
from mochaos.procs import cmdline, wait_gone
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.waiting import wait_for

RUNTIME_NAME = "mochaos-runc"
"""The name dockerd knows the shim by (``docker info`` DefaultRuntime)."""

SOCKET = Path("/var/run/docker.sock")
START_TIMEOUT = 60.0
STOP_GRACE = 30.0


def engine_dir() -> Path:
    """Where the daemon's pid file, log and shim live."""
    return state_dir() / "engine"


def _pid_file() -> Path:
    return engine_dir() / "dockerd.pid"


def _log_file() -> Path:
    return engine_dir() / "dockerd.log"


def answers(socket: Path = SOCKET) -> bool:
    """True when a Docker daemon answers on ``socket`` (``GET /_ping``)."""
    import socket as sock

    if not socket.exists():
        return False
    try:
        with sock.socket(sock.AF_UNIX, sock.SOCK_STREAM) as conn:
            conn.settimeout(2)
            conn.connect(str(socket))
            conn.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            return b"OK" in conn.recv(256)
    except OSError:
        return False


def write_shim(directory: Path) -> Path:
    """The executable dockerd runs as its runtime: our shim in front of the real runc."""
    runc = shutil.which("runc")
    if runc is None:
        raise InfraError("runc not found", hint="install Docker Engine (Debian: docker.io)")
    directory.mkdir(parents=True, exist_ok=True)
    wrapper = directory / RUNTIME_NAME
    wrapper.write_text(
        "#!/bin/sh\n"
        f"{runtime_shim.REAL_RUNC_ENV}={shlex.quote(runc)} "
        f'exec {shlex.quote(sys.executable)} -I -S {shlex.quote(runtime_shim.__file__)} "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def dockerd_command(dockerd: str, facts: HostFacts, directory: Path) -> list[str]:
    """The daemon's command line: the default socket, our pid file, the shim if needed."""
    argv = [dockerd, "--pidfile", str(directory / "dockerd.pid")]
    if facts.runtime_shim() is not None:
        shim = write_shim(directory)
        argv += ["--add-runtime", f"{RUNTIME_NAME}={shim}", "--default-runtime", RUNTIME_NAME]
    return argv


def _our_pid() -> int | None:
    try:
        pid = int(_pid_file().read_text().strip())
    except (OSError, ValueError):
        return None
    line = cmdline(pid)
    return pid if line and Path(line[0]).name == "dockerd" and str(_pid_file()) in line else None


def up(*, progress: Progress = say, facts: HostFacts | None = None) -> bool:
    """Start dockerd unless a daemon answers on the default socket; True when we started it."""
    if answers():
        owner = "mo-chaos's" if _our_pid() else "an existing"
        progress(f"Docker engine: {owner} daemon answers on {SOCKET}")
        return False
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise InfraError(
            "dockerd not found",
            hint="install Docker Engine >= 20.10 (Debian: apt-get install docker.io)",
        )
    facts = facts or HostFacts.read()
    shim = facts.runtime_shim()
    progress(
        f"Docker engine: starting dockerd with the {RUNTIME_NAME} runtime shim ({shim.why})"
        if shim
        else "Docker engine: starting dockerd (no host workaround needed)"
    )
    directory = engine_dir()
    directory.mkdir(parents=True, exist_ok=True)
    argv = dockerd_command(dockerd, facts, directory)
    with _log_file().open("ab") as log:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True
        )
    try:
        wait_for(
            lambda: (answers(), _last_line(_log_file())), what=f"dockerd on {SOCKET}",
            timeout=START_TIMEOUT, interval=0.2, hint=f"see {_log_file()}",
            stop_if=lambda: None if proc.poll() is None
            else f"dockerd exited ({proc.returncode}): {_last_line(_log_file())}",
        )  # fmt: skip
    except InfraError:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        raise
    progress(f"Docker engine: dockerd {proc.pid} ready (log {_log_file()})")
    return True


def down(*, progress: Progress = say) -> bool:
    """Stop the dockerd :func:`up` started (by its recorded pid); True when one was stopped."""
    pid = _our_pid()
    if pid is None:
        progress("Docker engine: no daemon started by mo-chaos is running")
        return False
    argv = cmdline(pid)
    os.kill(pid, signal.SIGTERM)
    if not wait_gone(lambda: cmdline(pid) == argv, STOP_GRACE):
        os.kill(pid, signal.SIGKILL)
    _pid_file().unlink(missing_ok=True)
    progress(f"Docker engine: dockerd {pid} stopped")
    return True


def status() -> str:
    """One line: who runs the daemon on the default socket."""
    pid = _our_pid()
    if answers():
        return f"running (dockerd {pid}, started by mo-chaos)" if pid else "running (not ours)"
    return "not running"


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1][-200:] if lines else "no output"
