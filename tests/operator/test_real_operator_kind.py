"""The seed scenario on a real kind cluster: the operator's image and chart built from its
checkout, real OpenKruise, real MatrixOne 1.2.3 pods, MinIO, SQL sessions (.ci/run's kind step).

Needs ``MOCHAOS_OPERATOR_SRC=<checkout>``, a Docker engine kind's nodes can run on (on a
host without every capability: ``python -m mochaos kind engine up``) and
``MOCHAOS_KIND_E2E=1``: a kind scenario takes about ten minutes and most of a 2-core
machine, so the main ``pytest tests/ -n 2`` run leaves it to that step and skips it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_real_operator import MAIN, failed, run_seed  # this folder's module (rootdir mode)

from mochaos.operator.targets.source import ENV_SOURCE

from support.kind_e2e import engine_reason, needs_kind_e2e

pytestmark = [
    pytest.mark.e2e,  # run_seed (test_real_operator.py) runs the suites in a child pytest
    pytest.mark.skipif(not os.environ.get(ENV_SOURCE), reason=f"{ENV_SOURCE} is unset"),
    needs_kind_e2e,
]


def test_main_on_kind_fails_the_seed_race_with_retries_from_the_operator_pods_log(
    tmp_path: Path,
) -> None:
    reason = engine_reason()
    if reason:
        pytest.skip(reason)
    # the operator runs in the kind node: no host port, so no turn behind the host's runs
    result = run_seed(
        tmp_path,
        "--mochaos-cluster=kind",
        "--operator",
        f"source:{os.environ[ENV_SOURCE]}@{MAIN}",
        host_port=False,
    )
    assert result["cluster_provider"] == "kind"
    # migration-completes joins them when the settle outlasts the migration's 120 s (a pool
    # refilling with real MatrixOne CNs keeps the cluster busy longer): docs/kind.md.
    assert failed(result) >= {
        "finalizer-completes", "no-label-residue", "scalein-skips-migrating", "retry-budget",
    }  # fmt: skip
    assert result["max_finalize_retries"] > 10
    log = Path(result["artifacts"]["operator_log"])
    assert "finalize CNClaim" in log.read_text()
