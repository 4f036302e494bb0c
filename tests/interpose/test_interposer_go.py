"""The interposer's own Go tests (rules, streaming, the journal, the control API against an
apiserver of httptest over TLS and HTTP/2), run with ``go test``."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from mochaos.interpose.interposer_build import NAME
from mochaos.paths import go_module


def test_go_tests_pass() -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("go not on PATH: the interposer's Go tests need Go >= 1.26")
    env = {**os.environ, "CGO_ENABLED": "0", "GOWORK": "off", "GOTOOLCHAIN": "local",
           "GOFLAGS": "-mod=mod"}  # fmt: skip
    out = subprocess.run(
        [go, "test", "-trimpath", "-count=1", "./..."], cwd=go_module(NAME), env=env,
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    tail = "\n".join((out.stdout + out.stderr).splitlines()[-40:])
    assert out.returncode == 0, f"go test failed:\n{tail}"
