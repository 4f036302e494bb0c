"""The MatrixOne image for real: the operator's pods for one namespace run in Docker, with SQL.

It needs a reachable Docker engine (``DOCKER_HOST`` or the default socket) and
``MOCHAOS_OPERATOR_SRC=<a matrixone-operator checkout holding 2301e3b>``, and skips,
saying which is missing, without them. The image is pulled or built (a cold build takes
~10 min on 2 cores; then it is cached), the operator's renderer is built from the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mochaos.operator.provenance.checkout import resolve

from support.docker_skip import docker_or_skip
from trial.run import HELD, TrialResult, run_trial

MAIN = "2301e3b"
MIB = 2**20


@pytest.fixture(scope="module")
def trial(tmp_path_factory: pytest.TempPathFactory) -> TrialResult:
    source = os.environ.get("MOCHAOS_OPERATOR_SRC")
    if not source:
        pytest.skip(
            "MOCHAOS_OPERATOR_SRC is not set: the trial renders pods with the operator's own code"
        )
    docker = docker_or_skip()
    work = tmp_path_factory.mktemp("trial")
    return run_trial(
        checkout=resolve(Path(source), MAIN),
        docker=docker,
        workdir=work / "pods",
        logs=work / "logs",
    )


def test_a_cn_started_by_the_operators_start_script_serves_sql(trial: TrialResult) -> None:
    assert trial.image == "matrixorigin/matrixone:1.2.3"
    assert [p.split("-")[1] for p in trial.pods[:2]] == ["log", "dn"]
    assert len(trial.pods) >= 3
    assert trial.time_to_sql > 0


def test_held_sessions_count_as_the_proxys_and_are_gone_once_released(trial: TrialResult):
    # The operator counts only sessions its CN takes as dispatched by MatrixOne's proxy.
    assert trial.sessions_held == HELD, trial.listed
    assert trial.sessions_from_proxy == HELD
    assert trial.sessions_after_release == 0


def test_every_process_is_alive_and_measured(trial: TrialResult) -> None:
    assert set(trial.rss) == set(trial.pods)
    assert all(rss > 64 * MIB for rss in trial.rss.values())
    assert set(trial.idle_cpu) == set(trial.pods)
    assert all(0 < cpu < 2 for cpu in trial.idle_cpu.values())
