"""summary.json follows each finished test: a run killed half-way keeps what it finished."""

from __future__ import annotations

import json
import signal

pytest_plugins = ["pytester"]

INNER = """
import os
import signal

from mochaos.report.rundir import create_run_dir, test_dir
from mochaos.report.summary import write_result
from mochaos.report.result import ScenarioResult


def test_first(mochaos, request):
    folder = test_dir(create_run_dir(mochaos.reports_dir, mochaos.run_id), request.node.nodeid)
    write_result(folder, ScenarioResult(nodeid=request.node.nodeid, outcome="passed"))


def test_second():
    os.kill(os.getpid(), signal.SIGKILL)  # the run dies like an OOM kill or a CI timeout
"""


def test_a_run_killed_after_its_first_test_has_that_test_in_its_summary(pytester):
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mochaos-reports-dir",
                                           str(pytester.path / "reports"))  # fmt: skip
    assert result.ret == -signal.SIGKILL
    summary = json.loads((pytester.path / "reports" / "latest" / "summary.json").read_text())
    assert [t["nodeid"] for t in summary["tests"]] == ["test_inner.py::test_first"]
    assert summary["counts"]["passed"] == 1
