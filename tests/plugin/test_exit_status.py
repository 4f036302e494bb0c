"""A pytest run exits by the one table from its summary's outcomes: an infrastructure error
is 3 (pytest alone says 1, as for an operator failure), a run that only judged nothing is 6
(pytest alone says 0). Scenarios whose set-up broke before their cluster was needed stand in
for real ones: the result, the report and the status come from the same code."""

from __future__ import annotations

import json

import pytest

from mochaos import exits

pytest_plugins = ["pytester"]

INNER = """
import pytest

from mochaos.errors import Inconclusive, InfraError


@pytest.fixture(scope="session")
def blocked(request):
    raise {raised}


def test_scenario(blocked, scenario):
    pass


def test_plain():
    pass
"""


@pytest.mark.parametrize(
    ("raised", "outcome", "status", "terminal"),
    [
        ('Inconclusive("the pool never got ready")', "inconclusive", exits.INCONCLUSIVE,
         "INCONCLUSIVE test_scenario"),
        ('InfraError("the cluster would not start")', "error", exits.INFRA, "ERROR test_scenario"),
    ],
)  # fmt: skip
def test_the_status_is_the_summarys(pytester, tmp_path, raised, outcome, status, terminal):
    pytester.makepyfile(test_inner=INNER.format(raised=raised))
    reports = tmp_path / "reports"
    result = pytester.runpytest(
        "-p", "no:xdist", "--operator=model:fixed", f"--mochaos-reports-dir={reports}",
        "--junitxml", str(tmp_path / "junit.xml"),
    )  # fmt: skip
    assert result.ret == status
    (test,) = json.loads((reports / "latest" / "summary.json").read_text())["tests"]
    assert test["outcome"] == outcome
    result.stdout.fnmatch_lines([f"*{terminal}*"])
    assert f'name="verdict" value="{outcome}"' in (tmp_path / "junit.xml").read_text()


def test_a_run_with_no_scenario_keeps_pytests_status(pytester):
    pytester.makepyfile(test_inner="def test_plain():\n    assert False\n")
    assert pytester.runpytest("-p", "no:xdist", "--operator=model:fixed").ret == 1
