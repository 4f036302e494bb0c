"""One child ``python -m pytest`` run and what it left: its exit status, its ``summary.json``
and, when asked, its JUnit cases.

Whatever runs the suites (or one test file) as a child process goes through here:
``qualify`` (one run per repetition), ``explore`` (one run per batch), the framework's own
tests and the bench scripts. The caller builds the arguments (:func:`reports_options` gives
the reports folder and JUnit file); :func:`run_pytest` runs them and reads back the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
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
                proc = subprocess.run(
                    command, cwd=cwd, env=environ, stdout=out, stderr=subprocess.STDOUT,
                    timeout=timeout, check=False,
                )  # fmt: skip
        else:
            proc = subprocess.run(
                command, cwd=cwd, env=environ, capture_output=capture, text=True,
                timeout=timeout, check=False,
            )  # fmt: skip
        exit_code = proc.returncode
        if capture:
            output, stdout = proc.stdout + proc.stderr, proc.stdout
    summary, why = read_summary(reports_dir)
    cases = read_junit(junit) if junit is not None and junit.is_file() else {}
    return ChildRun(exit_code, reports_dir, summary, why, cases, output, stdout,
                    time.monotonic() - started)  # fmt: skip
