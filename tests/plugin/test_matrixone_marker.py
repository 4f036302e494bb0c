"""A scenario marked matrixone(<components>) runs where the target can make those MatrixOne
components unreachable and is skipped, naming them, where it cannot — before any cluster or
operator is started for it."""

from __future__ import annotations

pytest_plugins = ["pytester"]

INNER = """
import pytest

@pytest.mark.matrixone("hakeeper")
def test_hakeeper():
    pass

@pytest.mark.matrixone("hakeeper", "lockservice")
def test_lock_service():
    pass

def test_any_target():
    pass
"""


def test_the_model_plays_hakeeper_only(pytester):
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest("-p", "no:xdist", "-rs", "--operator=model:fixed")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(
        ["*the target model:fixed cannot make MatrixOne's lockservice unreachable*"]
    )
