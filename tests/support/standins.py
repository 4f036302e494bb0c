"""Building the tests' Go stand-ins (small programs that play a manager's part)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def go_build(target: str, out: Path, *, cwd: Path) -> Path:
    """Build ``target`` (a package path or a ``.go`` file, seen from ``cwd``) into the
    static binary ``out``; the test is skipped when Go is not installed."""
    go = shutil.which("go")
    if go is None:
        pytest.skip("needs Go to build the stand-in manager")
    subprocess.run([go, "build", "-o", str(out), target], check=True, capture_output=True,
                   env={**os.environ, "CGO_ENABLED": "0"}, cwd=cwd)  # fmt: skip
    return out
