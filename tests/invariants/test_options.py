"""The invariants' thresholds from the run's options, overrides, and validation."""

from __future__ import annotations

import dataclasses

import pytest

from mochaos.config import CheckOptions
from mochaos.errors import UsageError
from mochaos.invariants.options import override, validate_options


def test_override_keeps_what_is_not_given():
    recorded = CheckOptions.from_operator_time(time_scale=0.2)
    assert override(recorded) == recorded
    budget = override(recorded, retry_budget=3)
    assert budget == dataclasses.replace(recorded, retry_budget=3)
    finalize = override(recorded, finalize_timeout=100)
    assert (finalize.finalize_timeout, finalize.retry_window) == (20, 20)
    assert finalize.migration_timeout == recorded.migration_timeout
    migration = override(recorded, migration_timeout=100)
    assert migration == dataclasses.replace(recorded, migration_timeout=20)
    budgets = override(recorded, churn_budget=2, conflict_budget=9)
    assert budgets == dataclasses.replace(recorded, churn_budget=2, conflict_budget=9)


def test_a_new_time_scale_rescales_every_threshold_not_given():
    recorded = CheckOptions.from_operator_time(time_scale=0.2)
    assert override(recorded, time_scale=1) == CheckOptions.from_operator_time()
    both = override(recorded, time_scale=2, finalize_timeout=10)
    assert both == dataclasses.replace(
        CheckOptions.from_operator_time(time_scale=2), finalize_timeout=20, retry_window=20
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("finalize_timeout", -1), ("retry_window", -1), ("grace", -0.1),
        ("migration_timeout", -1), ("converge_timeout", -1), ("retry_budget", -1),
        ("time_scale", 0), ("time_scale", -1),
    ],
)  # fmt: skip
def test_invalid_options_are_usage_errors(field, value):
    with pytest.raises(UsageError, match=f"invariant option {field}={value} is"):
        validate_options(dataclasses.replace(CheckOptions(), **{field: value}))


def test_each_kind_of_invalid_option_says_what_to_use():
    def message(**change: float) -> str:
        with pytest.raises(UsageError) as err:
            validate_options(dataclasses.replace(CheckOptions(), **change))
        return str(err.value)

    assert message(grace=-1) == "invariant option grace=-1 is negative: use >= 0 s"
    assert message(retry_budget=-1) == (
        "invariant option retry_budget=-1 is negative: use a count >= 0"
    )
    assert message(time_scale=0) == (
        "invariant option time_scale=0 is not positive: use a factor > 0 "
        "(1.0 = the operator's own intervals)"
    )


def test_zero_thresholds_are_valid():
    validate_options(
        CheckOptions(
            finalize_timeout=0, retry_budget=0, retry_window=0, grace=0,
            migration_timeout=0, converge_timeout=0, time_scale=0.01,
        )
    )  # fmt: skip


def test_override_refuses_a_time_scale_that_is_not_positive():
    with pytest.raises(UsageError, match="time_scale=0 is not positive"):
        override(CheckOptions.from_operator_time(), time_scale=0)
    with pytest.raises(UsageError, match="retry_budget=-2 is negative"):
        override(CheckOptions.from_operator_time(), retry_budget=-2)
