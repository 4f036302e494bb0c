"""Run the suites in a child pytest, as a user or CI would, and read what it reported."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from mochaos.report.junit import JUnitCase, read_junit

ROOT = Path(__file__).resolve().parents[2]
TIME_SCALE = "0.2"
"""The model's intervals shrunk 5×, so a scenario takes seconds instead of minutes."""


@dataclass
class SuiteRun:
    """Exit status, JUnit cases and report folder of one child pytest run."""

    exit_code: int
    cases: dict[str, JUnitCase]
    reports: Path
    output: str

    def case(self, name: str) -> JUnitCase:
        """The case whose name is ``name`` (the test function name with parameters)."""
        assert name in self.cases, f"{name} not in {sorted(self.cases)}\n{self.output[-3000:]}"
        return self.cases[name]


def run_suites(tmp_path: Path, *args: str) -> SuiteRun:
    """``pytest suites/ <args>`` in a child process with the shrunk time scale."""
    junit = tmp_path / "junit.xml"
    reports = tmp_path / "reports"
    cmd = [
        sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-n", "0",
        "--time-scale", TIME_SCALE, "--junitxml", str(junit), "--mochaos-reports-dir", str(reports),
        *args,
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    output = proc.stdout + proc.stderr
    cases = read_junit(junit) if junit.exists() else {}
    return SuiteRun(proc.returncode, cases, reports, output)


@pytest.fixture
def suites(tmp_path: Path):
    """Run the suites in a child pytest: ``suites("-k", "expr", "--operator", "model:fixed")``."""
    return lambda *args: run_suites(tmp_path, *args)
