"""A scenario marked ``interposer`` (its faults hold, fail or steer the operator's requests)
runs where the operator talks through an interposer and is skipped, saying why, where it
talks to the apiserver directly — before any cluster or operator is started for it."""

from __future__ import annotations

pytest_plugins = ["pytester"]

INNER = """
import pytest

@pytest.mark.interposer
def test_held():
    pass

def test_any_way():
    pass
"""


def test_runs_through_the_interposer_by_default(pytester):
    pytester.makepyfile(test_inner=INNER)
    pytester.runpytest("-p", "no:xdist", "--operator=model:fixed").assert_outcomes(passed=2)


def test_skipped_naming_the_setting_when_the_operator_talks_directly(pytester):
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(
        "-p", "no:xdist", "-rs", "--operator=model:fixed", "--mochaos-interposer=off"
    )  # fmt: skip
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*needs the operator's interposer*--mochaos-interposer off*"])
