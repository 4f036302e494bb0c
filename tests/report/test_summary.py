"""result.json per test, summary.json per run, and the terminal line."""

import json
from pathlib import Path

import pytest

from mochaos.errors import InfraError
from mochaos.invariants.verdict import Verdict, Violation
from mochaos.report import rundir
from mochaos.report.result import ScenarioResult
from mochaos.report.summary import merge_summary, terminal_line, write_result

META = {
    "operator_target": "model:upstream",
    "operator_version": "eb9b356",
    "cluster_provider": "local",
    "k8s_version": "v1.31.0",
}


def _result(nodeid: str, outcome: str, **kw) -> ScenarioResult:
    return ScenarioResult(nodeid=nodeid, outcome=outcome, **kw)  # type: ignore[arg-type]


def test_results_written_by_separate_workers_merge_into_one_summary(tmp_path):
    run = rundir.create_run_dir(tmp_path, "20261129T190501Z-abcdef")
    failed = _result(
        "suites/t.py::test_b",
        "failed",
        verdicts=[
            Verdict(
                "finalizer-completes",
                "fail",
                ("B1",),
                violation=Violation(1.0, 3, ("claim/X",), "stuck"),
            )
        ],
        finalize_retries={"X": 31},
    )
    results = [
        _result("suites/t.py::test_c", "passed"),
        failed,
        _result("suites/t.py::test_a", "error", message="cluster did not start"),
    ]
    for result in results:  # as xdist workers would, each into its own test folder
        write_result(rundir.test_dir(run, result.nodeid), result)
    path = merge_summary(tmp_path / "latest", meta=META)
    assert path == tmp_path / "latest" / "summary.json"
    summary = json.loads(path.read_text())
    assert summary["run_id"] == "20261129T190501Z-abcdef"
    assert {k: summary[k] for k in META} == META
    assert [t["nodeid"] for t in summary["tests"]] == [
        "suites/t.py::test_a",
        "suites/t.py::test_b",
        "suites/t.py::test_c",
    ]
    assert summary["counts"] == {"passed": 1, "failed": 1, "inconclusive": 0, "error": 1}
    assert ScenarioResult.from_dict(summary["tests"][1]) == failed
    assert summary["tests"][1]["max_finalize_retries"] == 31


def test_an_unreadable_result_is_an_infra_error(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "result.json").write_text('{"nodeid": ')
    with pytest.raises(InfraError, match="cannot read test result"):
        merge_summary(tmp_path, meta={})


def test_empty_run_has_zero_counts(tmp_path):
    summary = json.loads(merge_summary(tmp_path, meta={}).read_text())
    assert summary["tests"] == []
    assert set(summary["counts"].values()) == {0}


def test_terminal_line_of_a_failure():
    result = _result(
        "suites/test_race.py::scalein_during_migration",
        "failed",
        verdicts=[
            Verdict("finalizer-completes", "fail"),
            Verdict("single-binding", "pass"),
            Verdict("no-label-residue", "fail"),
            Verdict("finalizer-completes", "fail"),
        ],
        finalize_retries={"X": 31, "Y": 2},
    )
    timeline = Path("reports/latest/suites.test_race.scalein/timeline.md")
    assert terminal_line(result, timeline) == (
        "FAILED scalein_during_migration  finalizer-completes,no-label-residue  "
        "retries.finalize.max=31  reports/latest/suites.test_race.scalein/timeline.md"
    )


def test_terminal_line_of_a_pass_and_of_an_error():
    passed = _result("suites/t.py::test_x[fixed]", "passed")
    assert terminal_line(passed, None) == "PASSED test_x[fixed]  -  retries.finalize.max=0"
    error = _result("suites/t.py::test_x", "error", message="kube-apiserver did not\nbecome ready")
    assert terminal_line(error, None) == (
        "ERROR test_x  -  retries.finalize.max=0  (kube-apiserver did not become ready)"
    )
