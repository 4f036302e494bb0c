"""What the kind end-to-end tests share: the variable that lets them run and the engine check.

A kind scenario takes about ten minutes and most of a 2-core machine, so the main
``pytest tests/ -n 2`` run skips these tests; ``.ci/run``'s kind step sets
``MOCHAOS_KIND_E2E=1`` after starting a Docker engine (``python -m mochaos kind engine up``).
"""

from __future__ import annotations

import os
import subprocess

import pytest

E2E_ENV = "MOCHAOS_KIND_E2E"

needs_kind_e2e = pytest.mark.skipif(
    os.environ.get(E2E_ENV) != "1",
    reason=f"kind end to end runs in .ci/run's kind step ({E2E_ENV}=1)",
)


def engine_reason() -> str | None:
    """Why no kind cluster can start here (no engine, or one without the runtime shim this
    host needs), or None."""
    from mochaos.cluster.kind.docker_engine import DockerEngine, parse_info
    from mochaos.cluster.kind.engine_host import RUNTIME_NAME
    from mochaos.cluster.kind.host_facts import HostFacts
    from mochaos.errors import InfraError

    try:
        info = parse_info(DockerEngine().info())
    except InfraError as err:
        return f"no Docker engine: {err}"
    if HostFacts.read().runtime_shim() and info.default_runtime != RUNTIME_NAME:
        return "the engine cannot start kind's nodes here: `python -m mochaos kind engine up`"
    return None


def containers_labelled(label: str) -> set[str]:
    """The names of the Docker containers, running or not, that carry ``label``."""
    out = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"label={label}", "--format", "{{.Names}}"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return {line for line in out.splitlines() if line.strip()}
