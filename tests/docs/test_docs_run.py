"""Every code block in docs/ marked runnable runs as the page says.

A ``scenario`` block is saved as a test module and run by a child pytest on
``model:fixed`` at a small time scale, on the local cluster: it must pass. A block that
names a shipped file (``<!-- runnable: scenario <suite module> -->``) must also be that
file, word for word, so the page and the suite cannot drift apart.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from docs.blocks import runnable_blocks

ROOT = Path(__file__).resolve().parents[2]
KINDS = {"scenario"}
"""The kinds of run a block may claim (each has its test below)."""
TIME_SCALE = "0.2"


def _blocks(kind: str):
    return [pytest.param(b, id=b.id) for b in runnable_blocks() if b.kind == kind]


def test_every_runnable_block_claims_a_known_run():
    blocks = runnable_blocks()
    assert {b.kind for b in blocks} == KINDS, [(b.id, b.kind) for b in blocks]


@pytest.mark.parametrize("block", _blocks("scenario"))
def test_scenario_block_is_its_suite_module(block):
    if not block.name:
        pytest.skip(f"{block.id} names no shipped suite module")
    assert block.code == (ROOT / "mochaos" / "suites" / f"{block.name}.py").read_text()


@pytest.mark.parametrize("block", _blocks("scenario"))
def test_scenario_block_passes_on_the_fixed_model(block, tmp_path):
    (tmp_path / "test_doc_block.py").write_text(block.code)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "test_doc_block.py", "-p", "no:cacheprovider",
         "-n", "0", "--operator", "model:fixed", "--time-scale", TIME_SCALE,
         "--mochaos-reports-dir", str(tmp_path / "reports")],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    assert " passed" in output.splitlines()[-1], output[-1500:]
