"""Run the suites in a child pytest, as a user or CI would, and read what it reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos.report.child_pytest import ChildRun, reports_options, run_pytest

ROOT = Path(__file__).resolve().parents[2]
TIME_SCALE = "0.2"
"""The model's intervals shrunk 5×, so a scenario takes seconds instead of minutes."""


def run_suites(tmp_path: Path, *args: str) -> ChildRun:
    """``pytest suites/ <args>`` in a child process with the shrunk time scale."""
    reports = tmp_path / "reports"
    args = (
        "suites", "-p", "no:cacheprovider", "-n", "0", "--time-scale", TIME_SCALE,
        *reports_options(reports, tmp_path / "junit.xml"), *args,
    )  # fmt: skip
    return run_pytest(args, reports_dir=reports, junit=tmp_path / "junit.xml", cwd=ROOT,
                      capture=True, timeout=900)  # fmt: skip


@pytest.fixture
def suites(tmp_path: Path):
    """Run the suites in a child pytest: ``suites("-k", "expr", "--operator", "model:fixed")``."""
    return lambda *args: run_suites(tmp_path, *args)
