"""The run's index.html links every test's verdict and evidence, relative to the run folder."""

from __future__ import annotations

from pathlib import Path

from mochaos.invariants.verdict import Verdict
from mochaos.report.index import write_index
from mochaos.report.result import ScenarioResult
from mochaos.report.rundir import test_dir
from mochaos.report.summary import write_result


def test_every_test_is_listed_with_its_verdict_and_relative_links(tmp_path: Path):
    failing = test_dir(tmp_path, "suites/t.py::test_a")
    (failing / "timeline.html").write_text("x")
    write_result(failing, ScenarioResult(
        nodeid="suites/t.py::test_a", outcome="failed", bugs=["B1"],
        verdicts=[Verdict("finalizer-completes", "fail", ("B1",))],
        finalize_retries={"x": 31}, artifacts={"timeline_html": str(failing / "timeline.html")},
    ))  # fmt: skip
    passing = test_dir(tmp_path, "suites/t.py::test_b")
    write_result(passing, ScenarioResult(nodeid="suites/t.py::test_b", outcome="passed"))
    page = write_index(tmp_path, title="run").read_text()
    assert page.count("<tr><td>") == 2
    assert "finalizer-completes" in page and "B1 finalize-stuck" in page and ">31<" in page
    assert f'href="{failing.name}/timeline.html"' in page
    assert str(tmp_path) not in page, "links must survive moving the run folder"
