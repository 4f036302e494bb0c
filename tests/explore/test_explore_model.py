"""``python -m mochaos explore`` for real, on the reference model at a small budget.

The learn run and every case run on the local cluster, each case a test of its own in a
child pytest; the faults are limited to scale-in and the budget to the first cells, so the
bug report's signature must come from a learned point, not from a hand-written trigger.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mochaos.report.child_pytest import pytest_command
from mochaos.report.junit import read_junit

ROOT = Path(__file__).resolve().parents[2]
BUDGET = "2"


def _explore(tmp_path: Path, operator: str) -> tuple[int, dict, str]:
    cmd = [
        sys.executable, "-m", "mochaos", "explore", "--operator", operator,
        "--workload", "migration", "--faults", "scale-in", "--budget", BUDGET,
        "--time-scale", "0.2", "-n", "2", "--reports-dir", str(tmp_path),
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    (path,) = tmp_path.glob("explore-*/exploration.json")
    return proc.returncode, json.loads(path.read_text()), proc.stdout + proc.stderr


@pytest.mark.parametrize(("profile", "status"), [("upstream", 1), ("fixed", 0)])
def test_explore_rediscovers_the_seed_race_on_upstream_and_nothing_on_fixed(
    tmp_path, profile, status
):
    code, exploration, output = _explore(tmp_path, f"model:{profile}")
    assert code == status, output[-4000:]
    assert exploration["learn"]["outcome"] == "passed"
    labels = [f"{p['role']}: {p['attr']}" for p in exploration["points"]]
    assert "source pod: phase" in labels and "target pod: claimed-by" in labels, labels
    assert "| # | role | transition | first seen at |" in output
    cases = [c for c in exploration["cases"] if c["id"] != "learn"]
    assert len([c for c in cases if c["runs"]]) == int(BUDGET)
    if profile == "fixed":
        assert exploration["signatures"] == [], exploration["signatures"]
        return
    sig = next(s for s in exploration["signatures"] if {"B1", "B2", "B5"} <= set(s["bugs"]))
    assert {"finalizer-completes", "scalein-skips-migrating"} <= set(sig["invariants"]), sig
    assert "scale-in migrating set" in sig["smallest_label"], sig
    assert Path(sig["timeline"]).is_file(), sig
    # One JUnit case per exploration case, named after it.
    (junit,) = tmp_path.glob("explore-*/runs/*-matrix/junit.xml")
    names = set(read_junit(junit))
    assert f"test_explore[{sig['smallest']}]" in names, names


def test_the_pytest_entry_collects_one_test_per_case(tmp_path):
    from mochaos.explore.matrix import RoleFault
    from mochaos.explore.plan import Case, Exploration, Step
    from mochaos.explore.points import extract

    from .histories import migration_learn_run

    points = extract(migration_learn_run())
    cases = [Case(steps=()), Case(steps=(Step("p03", RoleFault("scale-in", "migrating set")),))]
    path = Exploration(
        workload="migration", target={"operator": "model:fixed"}, points=points,
        cases={c.id: c for c in cases},
    ).save(tmp_path / "exploration.json")  # fmt: skip
    cmd = pytest_command([
        "--pyargs", "mochaos.explore", "--collect-only", "-q",
        f"--mochaos-explore={path}", "-p", "no:cacheprovider", "-n", "0",
    ])  # fmt: skip
    out = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120).stdout
    assert "test_explore.py::test_explore[learn]" in out, out
    assert "test_explore.py::test_explore[p03-scale-in.migrating-set]" in out, out
