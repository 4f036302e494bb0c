"""Side-by-side comparison of targets: every difference between them shows."""

from __future__ import annotations

from pathlib import Path

from mochaos.report import compare


def report(operator: str, *scenarios: dict) -> dict:
    return {"operator": operator, "scenarios": list(scenarios)}


def scenario(name: str, status: str, invariants=(), retries=(), durations=()) -> dict:
    return {"nodeid": f"suites/t.py::{name}", "status": status,
            "failed_invariants": list(invariants), "finalize_retries": list(retries),
            "durations": list(durations)}  # fmt: skip


def test_rows_mark_the_scenarios_where_targets_disagree(tmp_path: Path):
    model = report("model:upstream",
                   scenario("seed", "fail", ["finalizer-completes"], [45, 40], [150, 160]),
                   scenario("lost", "fail", ["bound-has-pod"], [1], [60]))  # fmt: skip
    real = report("source:op@2301e3b",
                  scenario("seed", "fail", ["finalizer-completes"], [31], [170]),
                  scenario("lost", "pass", [], [0], [55]))  # fmt: skip
    table = compare.compare([model, real])
    rows = {r["scenario"]: r for r in table["rows"]}
    assert rows["seed"]["same"] and not rows["lost"]["same"]
    assert rows["seed"]["targets"]["model:upstream"]["retries"] == 45
    assert rows["seed"]["targets"]["model:upstream"]["seconds"] == 155
    text = compare.write(tmp_path, [model, real]).read_text()
    assert "| lost | fail; bound-has-pod; 1; 60s | pass; –; 0; 55s | **no** |" in text


def test_a_scenario_one_target_did_not_run_is_shown_as_such():
    table = compare.compare([report("a", scenario("x", "pass")), report("b")])
    assert table["rows"][0]["targets"]["b"]["verdict"] == "not run"


def test_the_sweep_between_targets_gives_a_line_per_target(tmp_path: Path):
    first = report("source:op@a", scenario("x", "pass")) | {
        "after_runs": {"line": "after source:op@a: nothing left (…); removed 11 CRDs (a)"}
    }
    second = report("model:upstream", scenario("x", "pass")) | {
        "after_runs": {"line": "after model:upstream: LEFT namespace mc-x (all removed)"}
    }
    text = compare.write(tmp_path, [first, second]).read_text()
    assert text.endswith(
        "Between targets (one cluster, targets one after another):\n\n"
        "- after source:op@a: nothing left (…); removed 11 CRDs (a)\n"
        "- after model:upstream: LEFT namespace mc-x (all removed)\n"
    )
