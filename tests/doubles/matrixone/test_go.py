"""The double's Go tests (MatrixOne's own clients against it), run with ``go test``."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from mochaos.doubles.matrixone import build


def test_go_tests_pass() -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("go not on PATH: the double's Go tests need Go >= 1.26")
    env = {
        **os.environ,
        **build.build_env(),
        "CGO_ENABLED": "0",
        "GOWORK": "off",
        "GOTOOLCHAIN": "local",
        "GOFLAGS": "-mod=readonly",
    }
    # -trimpath like the binary's build, so the compiled MatrixOne packages are shared
    # (without it a cold machine compiles them twice: ~2 min more).
    out = subprocess.run(
        [go, "test", "-trimpath", "-count=1", "./..."],
        cwd=build.GO_MODULE,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    tail = "\n".join((out.stdout + out.stderr).splitlines()[-40:])
    assert out.returncode == 0, f"go test failed:\n{tail}"
