"""The one exit-status table: a run's status from its outcome counts, several runs' worst,
and when a child pytest's status says more than its summary."""

from __future__ import annotations

import pytest

from mochaos import exits


@pytest.mark.parametrize(
    ("counts", "status"),
    [
        ({"passed": 3}, 0),
        ({}, 0),
        ({"passed": 1, "inconclusive": 1}, 6),
        ({"inconclusive": 2}, 6),
        ({"passed": 1, "error": 1, "inconclusive": 1}, 3),
        ({"failed": 1, "error": 1, "inconclusive": 1}, 1),
        ({"failed": 1}, 1),
    ],
)
def test_a_runs_status_comes_from_its_outcome_counts(counts, status):
    assert exits.of_counts(counts) == status


def test_the_worst_status_wins():
    assert exits.worst([0, 1]) == 1
    assert exits.worst([1, 3]) == 3
    assert exits.worst([0, 2, 3]) == 2
    assert exits.worst([0, 6]) == 6
    assert exits.worst([6, 1]) == 1
    assert exits.worst([]) == 0
    assert exits.worst([0, 99]) == 99  # unknown: at least a broken run


def test_a_usage_error_inside_a_test_is_the_front_ends_usage_status():
    summary = {"counts": {"passed": 1, "error": 2}, "usage_errors": 1}
    assert exits.of_summary(summary) == exits.USAGE
    assert exits.of_summary(summary, usage=exits.PYTEST_USAGE) == exits.PYTEST_USAGE
    assert exits.of_summary({"counts": {"failed": 1, "error": 1}, "usage_errors": 1}) == 1
    assert exits.of_summary({"counts": {"error": 1}}) == exits.INFRA


def test_a_child_runs_status_its_summary_does_not_explain_is_named():
    assert exits.unexplained(1, {"counts": {"failed": 1}}) == ""
    assert exits.unexplained(6, {"counts": {"inconclusive": 1}}) == ""
    assert exits.unexplained(4, {"counts": {"error": 1}, "usage_errors": 1}) == ""
    assert exits.unexplained(2, {"counts": {"passed": 1}}) == "pytest exit 2 (interrupted)"
    assert exits.unexplained(3, {"counts": {"passed": 1}}) == (
        "pytest exit 3, but its summary's outcomes say 0"
    )
