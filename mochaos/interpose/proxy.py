"""One interposer process: started for one operator, controlled over HTTP, stopped by pid.

It listens on loopback (or on an address a cluster's pods reach), writes the operator's
kubeconfig (its own certificate as the CA) and appends everything it does to its journal,
which the recorder follows. A rule is added, released and read through its control API
(:meth:`Interposer.add`, :meth:`Interposer.release`, :meth:`Interposer.release_all`); the
end of every scenario releases every rule, whatever happened. An interposer that died is
an infrastructure error naming it (:meth:`Interposer.check_alive`), never a verdict.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from mochaos.errors import InfraError, UsageError
from mochaos.interpose.interposer_build import binary
from mochaos.interpose.rules import Rule
from mochaos.runstate import register_pid, unregister_pid

OPERATOR_KUBECONFIG = "operator.kubeconfig"
"""The file in an interposer's folder the operator's kubeconfig is written to."""
START_TIMEOUT = 30.0
"""Seconds for the interposer to listen once started (a build before it is not counted)."""
CONTROL_TIMEOUT = 10.0
"""Seconds for one control request (a long poll adds its own)."""
READY_LINE = "interposer: listening on "


class Interposer:
    """One interposer between one operator and the apiserver (see the module docstring)."""

    def __init__(
        self,
        folder: Path,
        *,
        upstream_kubeconfig: Path,
        context: str | None = None,
        identity: str = "upstream",
        listen: str = "127.0.0.1:0",
        advertise: str = "127.0.0.1",
        sans: tuple[str, ...] = (),
    ) -> None:
        self.folder = folder
        self.kubeconfig = folder / OPERATOR_KUBECONFIG
        """The operator's kubeconfig: the interposer as its server, its certificate as CA."""
        self.certificate = folder / "interposer-ca.pem"
        self.journal = folder / "interposer.jsonl"
        self.log_path = folder / "interposer.log"
        self._upstream = upstream_kubeconfig
        self._context = context
        self._identity = identity
        self._listen = listen
        self._advertise = advertise
        self._sans = sans
        self._proc: subprocess.Popen[bytes] | None = None
        self._command: list[str] = []
        self.address = ""
        self._control = ""

    def start(self) -> Interposer:
        """Start the process and wait until it listens; InfraError naming why it did not."""
        exe = binary()
        self.folder.mkdir(parents=True, exist_ok=True)
        self._command = [
            str(exe), "--upstream-kubeconfig", str(self._upstream), "--identity", self._identity,
            "--listen", self._listen, "--advertise", self._advertise,
            "--cert-out", str(self.certificate), "--kubeconfig-out", str(self.kubeconfig),
            "--addr-out", str(self.folder / "addr"), "--control", "127.0.0.1:0",
            "--control-out", str(self.folder / "control"), "--journal", str(self.journal), "-v",
            *(["--upstream-context", self._context] if self._context else []),
            *(arg for san in self._sans for arg in ("--san", san)),
        ]  # fmt: skip
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                self._command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip
        register_pid(self._proc.pid, self._command)
        deadline = time.monotonic() + START_TIMEOUT
        ready = (self.folder / "addr", self.folder / "control")
        while not all(path.is_file() for path in ready):
            if self._proc.poll() is not None:
                self._gone("exited before it listened")
            if time.monotonic() > deadline:
                self.stop()
                raise InfraError(f"the interposer did not listen within {START_TIMEOUT:.0f}s",
                                 hint=f"see {self.log_path}")  # fmt: skip
            time.sleep(0.05)
        self.address = (self.folder / "addr").read_text().strip()
        self._control = (self.folder / "control").read_text().strip()
        return self

    @property
    def pid(self) -> int | None:
        """The process's pid while it runs."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def check_alive(self) -> None:
        """InfraError naming the interposer when its process is gone."""
        if self._proc is None or self._proc.poll() is not None:
            self._gone("is gone")

    def _gone(self, what: str) -> None:
        rc = None if self._proc is None else self._proc.poll()
        raise InfraError(
            f"the interposer {what} (exit status {rc}): {_last_line(self.log_path)}",
            hint=f"see {self.log_path}; the operator's requests went through it",
        )

    # -- the control API ---------------------------------------------------------------

    def _call(self, method: str, path: str, body: Any = None, *, timeout: float = 0) -> Any:
        self.check_alive()
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://{self._control}{path}", data=data, method=method,
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=CONTROL_TIMEOUT + timeout) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            said = _error_of(err)
            if err.code in (400, 404, 409):
                raise UsageError(f"the interposer refused {method} {path}: {said}") from err
            raise InfraError(
                f"the interposer answered {err.code} to {method} {path}: {said}"
            ) from err
        except OSError as err:
            self.check_alive()
            raise InfraError(f"the interposer did not answer {method} {path}: {err}") from err

    def add(self, rule: Rule) -> dict[str, Any]:
        """Add ``rule``; its view (state and counters)."""
        return self._call("POST", "/rules", rule.to_json())

    def rule(self, rule_id: str) -> dict[str, Any]:
        """One rule's view: its state (active, released, expired, removed) and counters."""
        return self._call("GET", f"/rules/{rule_id}")

    def release(self, rule_id: str, *, drop: bool = True) -> dict[str, Any]:
        """Release what the rule holds now and disable it (a crash's answer is dropped)."""
        return self._call("POST", f"/rules/{rule_id}/release", {"drop": drop})

    def release_all(self) -> list[str]:
        """Release every rule; the ids that were active (nothing is held after this)."""
        if self.pid is None:
            return []
        return list(self._call("POST", "/release-all", {}).get("released", []))

    def wait(self, since: int, *, timeout: float, rule: str | None = None) -> tuple[int, list[Any]]:
        """The rule records after ``since`` (long poll up to ``timeout`` s): (last seq, them)."""
        query = f"/wait?since={since}&timeout={timeout:g}" + (f"&rule={rule}" if rule else "")
        answer = self._call("GET", query, timeout=timeout)
        return int(answer.get("seq", since)), list(answer.get("records", []))

    def stats(self) -> dict[str, Any]:
        """Counts and latency percentiles of what went through it."""
        return self._call("GET", "/stats")

    # -- the end ------------------------------------------------------------------------

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM (it releases every rule first), SIGKILL after ``grace`` s; idempotent."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        unregister_pid(proc.pid)


def _error_of(err: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(err.read()).get("error", ""))
    except (ValueError, OSError):
        return err.reason


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1] if lines else "no output"
