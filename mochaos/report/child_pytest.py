"""One child ``python -m pytest`` run and what it left: its exit status, its ``summary.json``
and, when asked, its JUnit cases.

Whatever runs the suites (or one test file) as a child process goes through here:
``qualify`` (one run per repetition), ``explore`` (one run per batch), the framework's own
tests and the bench scripts. The caller builds the arguments (:func:`reports_options` gives
the reports folder and JUnit file); :func:`run_pytest` runs them and reads back the run.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mochaos.report.junit import JUnitCase, read_junit
from mochaos.report.summary import SUMMARY_FILE

PytestRunner = Callable[[list[str]], int]
"""Runs ``python -m pytest <args>`` and returns its exit status (a stand-in in tests)."""


def pytest_command(args: Sequence[str], python: str | None = None) -> list[str]:
    """The command line of a child pytest with ``args``, on ``python`` (default: this
    interpreter)."""
    return [python or sys.executable, "-m", "pytest", *args]


def reports_options(reports_dir: Path, junit: Path | None = None) -> list[str]:
    """The options that send a run's reports to ``reports_dir`` and its JUnit file to
    ``junit`` (default ``<reports_dir>/junit.xml``)."""
    junit = junit if junit is not None else reports_dir / "junit.xml"
    return ["--mochaos-reports-dir", str(reports_dir), "--junitxml", str(junit)]


def read_summary(reports_dir: Path) -> tuple[dict[str, Any] | None, str]:
    """The run's ``summary.json`` (in ``<reports_dir>/latest/``), or None and why not."""
    path = reports_dir / "latest" / SUMMARY_FILE
    if not path.is_file():
        return None, f"no {SUMMARY_FILE} written"
    try:
        return json.loads(path.read_text(encoding="utf-8")), ""
    except (OSError, ValueError) as exc:
        return None, f"unreadable {SUMMARY_FILE}: {exc}"


@dataclass
class ChildRun:
    """A finished child pytest: its exit status and what it wrote."""

    exit_code: int
    reports_dir: Path
    summary: dict[str, Any] | None
    """Its ``summary.json``; None when it wrote none or an unreadable one."""
    why_no_summary: str = ""
    """Why ``summary`` is None ("" when it was read)."""
    cases: dict[str, JUnitCase] = field(default_factory=dict)
    """Its JUnit cases by name, when a JUnit file was asked for and written."""
    output: str = ""
    """Its stdout and stderr, when captured."""
    stdout: str = ""
    """Its stdout alone, when captured (pytest's summary is its last line)."""
    seconds: float = 0.0
    """Wall time of the run."""

    def run_dir(self) -> Path:
        """The run's own report folder (``<reports_dir>/<run-id>``, through ``latest``)."""
        return (self.reports_dir / "latest").resolve()

    def case(self, name: str) -> JUnitCase:
        """The JUnit case called ``name`` (the test function's name with its parameters)."""
        assert name in self.cases, f"{name} not in {sorted(self.cases)}\n{self.output[-3000:]}"
        return self.cases[name]


def run_pytest(
    args: Sequence[str],
    *,
    reports_dir: Path,
    junit: Path | None = None,
    runner: PytestRunner | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    capture: bool = False,
    log: Path | None = None,
    timeout: float | None = None,
    python: str | None = None,
) -> ChildRun:
    """Run ``python -m pytest <args>`` to its end and read back its run.

    ``args`` are the child's whole arguments: they name ``reports_dir`` (and ``junit``, to
    read its cases) through :func:`reports_options` or otherwise. The child's output passes
    through, or ``capture`` keeps it in :attr:`ChildRun.output`, or it is appended to the file
    ``log``. ``python`` runs another interpreter (another checkout's venv). ``runner`` replaces
    the subprocess (a test's stand-in): the process options then do not apply.
    """
    if capture and log is not None:
        raise ValueError("capture and log are exclusive: the output goes to one place")
    started = time.monotonic()
    output = stdout = ""
    if runner is not None:
        exit_code = runner(list(args))
    else:
        command = pytest_command(args, python)
        environ = None if env is None else dict(env)
        if log is not None:
            with log.open("a", encoding="utf-8") as out:
                exit_code, _, _ = _run(command, cwd=cwd, env=environ, stdout=out,
                                       stderr=subprocess.STDOUT, timeout=timeout)  # fmt: skip
        elif capture:
            exit_code, stdout, err = _run(command, cwd=cwd, env=environ, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, timeout=timeout)  # fmt: skip
            output = stdout + err
        else:
            exit_code, _, _ = _run(command, cwd=cwd, env=environ, timeout=timeout)
    summary, why = read_summary(reports_dir)
    cases = read_junit(junit) if junit is not None and junit.is_file() else {}
    return ChildRun(exit_code, reports_dir, summary, why, cases, output, stdout,
                    time.monotonic() - started)  # fmt: skip


STOP_GRACE = 120.0
"""Seconds a child pytest asked to stop (SIGINT) may take to end its tests' teardowns (stop
the operators it started, delete its namespaces) before it is killed."""


def _run(command: list[str], *, timeout: float | None, **popen: Any) -> tuple[int, str, str]:
    """Run ``command`` to its end: (exit status, stdout, stderr as text when piped).

    A child pytest owns processes and namespaces that only its own teardown cleans up, so it
    is never killed first: when this process is asked to stop — Ctrl-C (the terminal sends the
    child SIGINT too) or SIGTERM (a CI job's timeout, which reaches only this process: it is
    passed on as SIGINT) — it waits up to :data:`STOP_GRACE` seconds for the child to end,
    then kills it, and raises KeyboardInterrupt. A ``timeout`` of the child's own stops it the
    same way and raises subprocess.TimeoutExpired."""
    proc = subprocess.Popen(command, text=True, **popen)
    stop = _StopRequest(proc)
    with stop.installed():
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(proc)
            raise
        except KeyboardInterrupt:
            _stop(proc, interrupted=True)
            raise
    if stop.requested:
        raise KeyboardInterrupt(f"stopped by signal {stop.requested}; the child pytest ended")
    return proc.returncode, out or "", err or ""


def _stop(proc: subprocess.Popen[str], *, interrupted: bool = False) -> None:
    """End the child: SIGINT (unless the terminal already sent it), then wait, then kill."""
    if not interrupted:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=STOP_GRACE)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        proc.kill()
        proc.communicate()


class _StopRequest:
    """A SIGTERM to this process while a child runs: passed on to the child as SIGINT (its
    pytest then ends its tests and tears them down), remembered, raised once it ended."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.requested: int | None = None

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Handle SIGTERM while the block runs (in the main thread only: elsewhere a signal
        handler cannot be set, and the default applies)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.signal(signal.SIGTERM, self._on_term)
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, previous)

    def _on_term(self, signum: int, frame: object) -> None:
        if self.requested is not None:  # asked twice: do not wait any longer
            self.proc.kill()
            return
        self.requested = signum
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGINT)
