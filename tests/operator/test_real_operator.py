"""The seed scenario on the real operator's code: main (2301e3b) and PR #592's head (caee443).

Needs a matrixone-operator checkout (a work tree or git directory holding both commits):
``MOCHAOS_OPERATOR_SRC=<checkout>``; without it these tests skip with that reason (CI has
none). Each builds the manager at the commit (cached), runs it on the local cluster with
its CRDs, webhooks, the real kruise-manager and the MatrixOne double, and judges the
scenario.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import nullcontext
from pathlib import Path

import pytest
from filelock import FileLock

from mochaos.operator.targets.source import ENV_SOURCE
from mochaos.report.child_pytest import reports_options, run_pytest
from mochaos.suites import SEED

ROOT = Path(__file__).resolve().parents[2]
MAIN = "2301e3b"
PR592 = "caee443"

pytestmark = pytest.mark.skipif(
    not os.environ.get(ENV_SOURCE),
    reason=f"{ENV_SOURCE} is unset: point it at a matrixone-operator checkout to judge its code",
)


def run_seed(tmp_path: Path, *target: str, host_port: bool = True, workers: int = 0) -> dict:
    """The seed scenario in a child pytest with the ``target`` options; its result.
    ``host_port``: the operator binds the host's webhook port (a manager run here, not in a
    kind node), so the runs take turns. ``workers``: the child's ``-n``."""
    junit, reports = tmp_path / "junit.xml", tmp_path / "reports"
    args = [
        "suites", "-k", SEED, "-n", str(workers), "-p", "no:cacheprovider", *target,
        *reports_options(reports, junit),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.setdefault("GONOSUMDB", "github.com/matrixorigin")
    env["MOCHAOS_CLUSTER_NAME"] = "mochaos-real"
    # One real-operator build per machine at a time (the operator's webhook port is fixed):
    # under xdist the runs take turns.
    lock = Path(tempfile.gettempdir()) / "mochaos-real-operator.lock"
    with FileLock(str(lock)) if host_port else nullcontext():
        run = run_pytest(args, reports_dir=reports, junit=junit, cwd=ROOT, env=env, capture=True,
                         timeout=1800)  # fmt: skip
    assert junit.exists(), run.output[-3000:]
    (case,) = run.cases.values()
    assert case.outcome in ("passed", "failure"), (case, run.output[-3000:])
    assert run.summary is not None, run.why_no_summary
    (result,) = run.summary["tests"]
    return result


def failed(result: dict) -> set[str]:
    return {v["invariant"] for v in result["verdicts"] if v["status"] == "fail"}


def test_main_keeps_the_migrating_claim_finalizing_forever(tmp_path: Path):
    """The bug report's race on the operator's main branch: B1, B2/B6, B5, with the finalize
    retries read from the real manager's log."""
    result = run_seed(tmp_path, "--operator", f"source:{os.environ[ENV_SOURCE]}@{MAIN}")
    assert failed(result) >= {
        "finalizer-completes", "no-label-residue", "scalein-skips-migrating", "retry-budget",
    }  # fmt: skip
    assert result["max_finalize_retries"] > 10
    assert result["operator_version"].startswith(f"matrixone-operator@{MAIN}")


def test_pr592_finalizes_but_leaks_the_pod_it_unlabels(tmp_path: Path):
    """PR #592 skips the migrating claim and Finalize completes; the pod whose label its
    Finalize releases for another holder is left Bound with no owner once that holder goes."""
    result = run_seed(tmp_path, "--operator", f"source:{os.environ[ENV_SOURCE]}@{PR592}")
    assert not failed(result) & {"finalizer-completes", "scalein-skips-migrating"}
    assert failed(result) >= {"pod-claim-agreement", "no-leaked-pods"}
    assert result["max_finalize_retries"] <= 2


def test_the_real_managers_doubles_down_mid_scenario_are_never_its_verdict(tmp_path: Path):
    """The MatrixOne double and the workload controller stopped mid-scenario under PR #592's
    manager (which fails the seed on its own): an infrastructure error naming both, never
    "invariant violated"."""
    from support.child_runs import CHILD, private_cluster_name, remove_private_cluster

    name = private_cluster_name()
    reports = tmp_path / "reports"
    args = [
        str(CHILD / "dependency_outage.py"), "-n", "0", "-p", "no:cacheprovider",
        "--operator", f"source:{os.environ[ENV_SOURCE]}@{PR592}",
        "--mochaos-reports-dir", str(reports),
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env |= {"MOCHAOS_CLUSTER_NAME": name, "GONOSUMDB": "github.com/matrixorigin"}
    try:
        with FileLock(str(Path(tempfile.gettempdir()) / "mochaos-real-operator.lock")):
            run = run_pytest(args, reports_dir=reports, cwd=ROOT, env=env, capture=True,
                             timeout=1800)  # fmt: skip
    finally:
        remove_private_cluster(name)
    assert run.summary is not None, (run.why_no_summary, run.output[-3000:])
    (result,) = run.summary["tests"]
    assert result["outcome"] == "error", (result["outcome"], run.output[-3000:])
    assert "a dependency of the operator was unavailable" in result["message"]
    assert "matrixone for" in result["message"] and "kruise for" in result["message"]
