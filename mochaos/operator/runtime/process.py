"""An operator that runs as a local process: start, wait ready, follow, stop by pid.

Shared by the model target and the binary target. The process writes its log
to a file we own; readiness is a file the process writes (model) or a log line
(binary). Every stop goes through the pid we started, never a name.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from mochaos import exits
from mochaos.errors import InfraError, UsageError
from mochaos.interpose.proxy import Interposer
from mochaos.observe.periods import stopped
from mochaos.operator.target import MatrixOneFaults, PoolSpec, Sessions, Waits
from mochaos.runstate import register_pid, unregister_pid
from mochaos.tooling.followed_files import follow_file, log_size, read_lines, tail

READY_TIMEOUT = 30.0


class OperatorProcess:
    """One operator process for one namespace; implements
    :class:`mochaos.operator.target.RunningOperator`."""

    def __init__(
        self,
        *,
        target: str,
        version: str,
        user_agent: str,
        command: list[str],
        log_path: Path,
        ready: Callable[[OperatorProcess], bool] | None = None,
        ready_file: Path | None = None,
        env: dict[str, str] | None = None,
        ready_timeout: float = READY_TIMEOUT,
        sessions: Sessions,
        waits: Waits,
        pool_spec: PoolSpec | None = None,
        pass_fds: tuple[int, ...] = (),
        interposer: Interposer | None = None,
        matrixone: MatrixOneFaults | None = None,
    ) -> None:
        self.target = target
        self.version = version
        self.user_agent = user_agent
        self.command = command
        self.log_path = log_path
        self._ready = ready or (lambda p: ready_file is not None and ready_file.exists())
        self._ready_file = ready_file
        self._env = env
        self._ready_timeout = ready_timeout
        self.sessions = sessions
        self.waits = waits
        self.pool_spec = pool_spec
        self.matrixone = matrixone
        """MatrixOne's components made unreachable (None: its environment cannot)."""
        self._pass_fds = pass_fds
        self.interposer = interposer
        """The interposer between this operator and the apiserver (None: direct); it lives
        as long as the operator, restarts included."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._resume: threading.Timer | None = None
        self._log_offset = 0
        self.starts = 0

    @property
    def pid(self) -> int | None:
        """Pid of the running process (None when stopped)."""
        return self._proc.pid if self._proc and self._proc.poll() is None else None

    def start(self) -> None:
        """Start the process (log appended) and wait until it is ready."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self._ready_file is not None:
            self._ready_file.unlink(missing_ok=True)
        self._log_offset = log_size(self.log_path)
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self._env,
                start_new_session=True,
                pass_fds=self._pass_fds,
            )
        self.starts += 1
        register_pid(self._proc.pid, self.command)
        frozen = stopped(lambda: self.pid)
        deadline = time.monotonic() + self._ready_timeout
        while time.monotonic() < deadline:
            rc = self._proc.poll()
            if rc is not None:
                self._failed_to_start(rc)
            if self._ready(self):
                return
            time.sleep(0.05)
            if frozen() is not None:  # stopped from outside: its time frozen does not count
                deadline += 0.05
        self.stop()
        raise InfraError(
            f"operator {self.target} not ready after {self._ready_timeout:.0f}s",
            hint=f"see its log {self.log_path}",
        )

    def _failed_to_start(self, rc: int) -> None:
        tail = self.log_tail(1) or "no output"
        unregister_pid(self._proc.pid if self._proc else 0)
        if rc == exits.USAGE:
            raise UsageError(f"operator {self.target} refused its arguments: {tail}")
        raise InfraError(
            f"operator {self.target} exited with status {rc} before it was ready: {tail}",
            hint=f"see {self.log_path}",
        )

    def log_lines(self) -> list[str]:
        """The lines the current run logged so far (a restart's earlier lines excluded)."""
        return read_lines(self.log_path, self._log_offset)

    def log_tail(self, lines: int) -> str:
        """The current run's last non-empty log lines, joined (empty when none yet)."""
        return tail(self.log_lines(), lines)

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds, then its interposer; idempotent."""
        self._halt(grace)
        if self.interposer is not None:
            self.interposer.stop()

    def _halt(self, grace: float = 5.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds (the interposer stays)."""
        if self._resume:
            self._resume.cancel()
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        unregister_pid(proc.pid)

    def kill(self) -> None:
        """SIGKILL without a chance to clean up."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
            unregister_pid(proc.pid)

    def restart(self) -> None:
        """Stop (gracefully) and start again; the log keeps growing, the interposer stays."""
        self._halt()
        self.start()

    def pause(self, seconds: float) -> None:
        """SIGSTOP now and SIGCONT after ``seconds`` (returns immediately)."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            raise InfraError(f"cannot pause operator {self.target}: it is not running")
        os.kill(proc.pid, signal.SIGSTOP)
        self._resume = threading.Timer(seconds, self.resume)
        self._resume.daemon = True
        self._resume.start()

    def resume(self) -> None:
        """SIGCONT a paused process (no-op when not running)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)

    def follow_log(self, stop: threading.Event) -> Iterator[str]:
        """Yield log lines from the start of the file until ``stop`` is set."""
        return follow_file(self.log_path, stop)
