"""A scenario marked model_only runs on the reference model and is skipped, with its reason,
on a real operator target — before any cluster or operator is started for it."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]

INNER = """
import pytest

@pytest.mark.model_only("it reads the model's score annotation")
def test_needs_the_model():
    pass

def test_any_target():
    pass
"""


def _manager(tmp_path: Path) -> Path:
    exe = tmp_path / "manager"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    return exe


def test_skipped_with_its_reason_on_a_real_manager(pytester, tmp_path):
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(
        "-p", "no:xdist", "-rs", f"--operator=binary:{_manager(tmp_path)}",
        f"--operator-crds={tmp_path}",
    )  # fmt: skip
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*model only (it reads the model's score annotation)*binary:*"])


def test_run_on_the_model(pytester):
    pytester.makepyfile(test_inner=INNER)
    pytester.runpytest("-p", "no:xdist", "--operator=model:fixed").assert_outcomes(passed=2)
