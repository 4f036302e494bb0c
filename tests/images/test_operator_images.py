"""The controllers' images packaged here, run for real in the Docker engine (skip without)."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from mochaos.images.operator_images import NONROOT, manager_image
from mochaos.tooling.docker_cli import DockerCli

from support.docker_skip import docker_or_skip

PROGRAM = r"""
#include <stdio.h>
#include <unistd.h>
int main(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (line[0] == 'C' && line[3] == 'B') fputs(line, stdout);
  printf("uid=%d\n", (int)getuid());
  return 0;
}
"""


@pytest.fixture(scope="module")
def docker() -> DockerCli:
    return docker_or_skip()


@pytest.fixture(scope="module")
def static_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no C compiler")
    src = tmp_path_factory.mktemp("prog") / "manager.c"
    src.write_text(PROGRAM)
    out = src.with_suffix("")
    made = subprocess.run([gcc, "-static", "-Os", "-o", str(out), str(src)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"no static C library: {made.stderr.decode()[:120]}")
    return out


def test_a_manager_binary_runs_as_slash_manager_as_the_nonroot_user(
    docker: DockerCli, static_program: Path
) -> None:
    ref = f"mochaos-test/manager-{uuid.uuid4().hex[:8]}:v1"
    try:
        assert manager_image(static_program, ref=ref, docker=docker, progress=lambda _: None) == ref
        run = subprocess.run(
            [docker.path, "run", "--rm", "--network", "none", ref], capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        assert f"uid={NONROOT.split(':')[0]}" in run.stdout
        # Privileged, as kind's nodes run: on a host whose bounding set lacks a capability
        # this only starts through the engine's capability shim (`kind engine up`).
        privileged = subprocess.run(
            [docker.path, "run", "--rm", "--network", "none", "--privileged", ref],
            capture_output=True, text=True,
        )  # fmt: skip
        assert privileged.returncode == 0, privileged.stderr
        assert "CapBnd" in privileged.stdout
    finally:
        subprocess.run([docker.path, "image", "rm", ref], capture_output=True)
