"""`python -m mochaos qualify` end to end: the verdict's exit status per model profile."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mochaos.report.junit import validate_junit
from mochaos.suites import SEED

ROOT = Path(__file__).resolve().parents[2]


def _qualify(tmp_path: Path, operator: str) -> tuple[int, Path]:
    cmd = [
        sys.executable, "-m", "mochaos", "qualify", "--operator", operator, "--repeat", "1",
        "-k", SEED, "--reports-dir", str(tmp_path), "--", "--time-scale", "0.2",
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    (qdir,) = tmp_path.glob("qual-*")
    return proc.returncode, qdir


@pytest.mark.parametrize(("profile", "status"), [("upstream", 1), ("fixed", 0)])
def test_qualify_exit_status_follows_the_operator(tmp_path, profile, status):
    code, qdir = _qualify(tmp_path, f"model:{profile}")
    assert code == status, (qdir / "qualification.md").read_text()
    report = json.loads((qdir / "qualification.json").read_text())
    (scenario,) = report["scenarios"]
    assert scenario["status"] == ("fail" if status else "pass"), scenario
    validate_junit(qdir / "junit.xml")
    assert f"model:{profile}" in (qdir / "qualification.md").read_text()
