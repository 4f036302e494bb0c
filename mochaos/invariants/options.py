"""The invariants' thresholds: a run's recorded options overridden, and validated.

``CheckOptions.from_operator_time`` (mochaos.config) turns the run's options into the
wall seconds the invariants judge with; ``override`` changes some of them on a run's
recorded CheckOptions, in operator seconds, as ``python -m mochaos check`` does.
"""

from __future__ import annotations

import dataclasses

from mochaos.config import CheckOptions
from mochaos.errors import UsageError


def override(
    options: CheckOptions,
    *,
    time_scale: float | None = None,
    finalize_timeout: float | None = None,
    retry_budget: int | None = None,
    migration_timeout: float | None = None,
    churn_budget: int | None = None,
    conflict_budget: int | None = None,
) -> CheckOptions:
    """``options`` with the given run options (operator seconds) replaced; the rest kept.

    A new time scale rescales every threshold that is not given.
    """
    validate_options(options)
    s = options.time_scale if time_scale is None else time_scale
    k = s / options.time_scale
    changed = dataclasses.replace(
        options,
        finalize_timeout=options.finalize_timeout * k
        if finalize_timeout is None
        else finalize_timeout * s,
        retry_window=options.retry_window * k if finalize_timeout is None else finalize_timeout * s,
        retry_budget=options.retry_budget if retry_budget is None else retry_budget,
        grace=options.grace * k,
        migration_timeout=options.migration_timeout * k
        if migration_timeout is None
        else migration_timeout * s,
        converge_timeout=options.converge_timeout * k,
        churn_budget=options.churn_budget if churn_budget is None else churn_budget,
        conflict_budget=options.conflict_budget if conflict_budget is None else conflict_budget,
        time_scale=s,
    )
    validate_options(changed)
    return changed


def validate_options(options: CheckOptions) -> None:
    """Raise UsageError for a negative threshold or a time scale that is not positive."""
    durations = {
        "finalize_timeout": options.finalize_timeout,
        "retry_window": options.retry_window,
        "grace": options.grace,
        "migration_timeout": options.migration_timeout,
        "converge_timeout": options.converge_timeout,
    }
    for name, value in durations.items():
        if value < 0:
            raise UsageError(f"invariant option {name}={value} is negative", hint="use >= 0 s")
    for name in ("retry_budget", "churn_budget", "conflict_budget"):
        if getattr(options, name) < 0:
            raise UsageError(
                f"invariant option {name}={getattr(options, name)} is negative",
                hint="use a count >= 0",
            )
    if options.time_scale <= 0:
        raise UsageError(
            f"invariant option time_scale={options.time_scale} is not positive",
            hint="use a factor > 0 (1.0 = the operator's own intervals)",
        )
