"""What targets need beside the control plane: declared per target, provided on demand.

Unit tests of the declaration and its record; then one private cluster started as for the
reference model (nothing beside the control plane), given kruise-manager the way a real
target's install gives it, which a kill restarts (recorded like any component's restart),
a kept cluster's ``up()`` brings back, and ``down()`` stops.
"""

from __future__ import annotations

import os
import secrets
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from mochaos.binaries import control_plane
from mochaos.cluster import environment, events
from mochaos.cluster.environment import Environment
from mochaos.cluster.local import doubles_host
from mochaos.cluster.local.cluster_dir import COMPONENTS
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.kruise import manager, module
from mochaos.operator import parse_target
from mochaos.procs import cmdline

from support.polling import wait_until

KRUISE = Environment(kruise=module.DEFAULT_VERSION)


def test_the_model_needs_nothing_and_a_real_target_its_kruise_and_the_double(tmp_path: Path):
    assert parse_target("model:upstream").environment == Environment()
    (tmp_path / "go.mod").write_text("require github.com/openkruise/kruise-api v1.5.1\n")
    manager_file = tmp_path / "manager"
    manager_file.write_text("#!/bin/sh\n")
    manager_file.chmod(0o755)
    target = parse_target(f"binary:{manager_file}", {"operator_crds": tmp_path})
    assert target.environment == Environment(kruise="v1.5.1", matrixone=True)
    assert target.environment.describe() == "kruise-manager v1.5.1, the MatrixOne double"


def test_providing_adds_to_what_runs_with_one_kruise_version():
    both = environment.merged(KRUISE, Environment(matrixone=True))
    assert both == Environment(kruise=module.DEFAULT_VERSION, matrixone=True)
    assert environment.merged(both, Environment(kruise="v1.5.1")).kruise == "v1.5.1"
    assert environment.merged(both, Environment()) == both


def test_the_record_round_trips_and_orders_the_parts(tmp_path: Path):
    assert environment.read(tmp_path) == Environment()
    env = Environment(kruise="v1.4.0", matrixone=True)
    environment.write(tmp_path, env)
    assert environment.read(tmp_path) == env
    assert [p.name for p in environment.parts(env)] == ["kruise", "matrixone"]
    assert [p.kind for p in environment.parts(env)] == ["component", "double"]
    assert environment.parts(Environment()) == ()


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    if not control_plane.all_built():
        pytest.skip("local binaries not built")
    p = LocalProvider(name=f"mc-env-{secrets.token_hex(3)}")
    try:
        p.up()
        yield p
    finally:
        p.down()
        (p.workdir / f"{p.cluster_name}.lock").unlink(missing_ok=True)


def _kruise_pid(p: LocalProvider) -> int | None:
    return doubles_host.running(manager.spec(module.DEFAULT_VERSION), p.supervision)


def test_kruise_is_provided_restarted_kept_and_stopped(provider: LocalProvider):
    assert [s.name for s in provider.supervision.table()] == list(COMPONENTS)
    assert "environment              nothing" in provider.status()
    provider.provide(KRUISE)
    pid = _kruise_pid(provider)
    assert pid is not None and provider.is_healthy()
    assert provider.environment == KRUISE
    # A kill is restarted by the supervisor and recorded like any component's restart.
    os.kill(pid, signal.SIGKILL)
    event = wait_until(
        lambda: [e for e in events.read(provider.events_log()) if e.component == "kruise"],
        timeout=30, what="kruise-manager restarted",
    )[-1]  # fmt: skip
    assert event.old_pid == pid and event.event == "restarted"
    wait_until(provider.is_healthy, timeout=60, what="kruise-manager healthy again")
    assert "component kruise         healthy" in provider.status()
    assert "1 restart(s)" in next(
        ln for ln in provider.status().splitlines() if "component kruise" in ln
    )
    # Red: an unhealthy kruise-manager makes the cluster unhealthy (its /readyz gone).
    running = _kruise_pid(provider)
    assert running is not None
    provider.supervision.hold("kruise")
    try:
        os.kill(running, signal.SIGKILL)
        wait_until(lambda: not provider.is_healthy(), timeout=10, what="the cluster unhealthy")
        assert "component kruise         NOT HEALTHY" in provider.status()
    finally:
        provider.supervision.release("kruise")
    wait_until(provider.is_healthy, timeout=60, what="healthy once the hold is released")
    # A kept cluster brings it back as it was; down() stops it.
    again = _kruise_pid(provider)
    provider.up()
    assert _kruise_pid(provider) == again
    argv = cmdline(again) if again else []
    provider.down()
    assert again is not None and cmdline(again) != argv, "down() left kruise-manager running"


def test_providing_to_a_cluster_that_does_not_run_is_refused():
    from mochaos.errors import InfraError

    p = LocalProvider(name=f"mc-env-none-{secrets.token_hex(2)}")
    try:
        with pytest.raises(InfraError, match="is not running: nothing to provide kruise-manager"):
            p.provide(KRUISE)
        assert not p.cluster_dir.exists()
    finally:
        (p.workdir / f"{p.cluster_name}.lock").unlink(missing_ok=True)
