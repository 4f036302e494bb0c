"""The shipped GitHub Actions workflows pass actionlint (with shellcheck on their scripts
when it is installed); a broken workflow does not."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .actionlint import actionlint

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / "docs" / "ci" / "github").glob("*.yml"))


@pytest.fixture(scope="module")
def lint() -> Path:
    binary = actionlint()
    if binary is None:
        pytest.skip("Go is not installed: actionlint is built from its Go module")
    return binary


def test_the_shipped_workflows_are_clean(lint: Path):
    assert len(WORKFLOWS) == 2
    proc = subprocess.run([str(lint), *map(str, WORKFLOWS)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


BROKEN = """
on: pull_request
jobs:
  chaos:
    runs-on: ubuntu-24.04
    steps:
      - run: pytest --mochaos-shard ${{ matrix.shard }}
      - run: echo "$UNQUOTED" && cd $HOME/x
      - uses: actions/checkout@v4
        with:
          fetch-depht: 1
"""


def test_a_broken_workflow_is_caught(lint: Path, tmp_path: Path):
    path = tmp_path / "broken.yml"
    path.write_text(BROKEN)
    proc = subprocess.run([str(lint), str(path)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert 'property "shard" is not defined' in proc.stdout
    assert 'input "fetch-depht" is not defined' in proc.stdout
