"""The invariants' thresholds: from a run's options (operator time), overridden, validated.

``run_options`` turns the pytest options (``--time-scale``, ``--finalize-timeout``,
``--retry-budget``, ``--migration-timeout``, in the operator's seconds) into the wall
seconds the invariants judge with; ``override`` changes some of them on a run's
recorded CheckOptions, as ``python -m mochaos check`` does.
"""

from __future__ import annotations

import dataclasses

from mochaos.errors import UsageError
from mochaos.types import CheckOptions

TIME_SCALE = 1.0
FINALIZE_TIMEOUT = 60.0
RETRY_BUDGET = 10
MIGRATION_TIMEOUT = 120.0
"""Defaults of the run's options (operator seconds; the budget is a count)."""

GRACE = 20.0
"""Operator seconds a bad state may last before a state invariant judges it: above the
operator's own legitimate waits (10 s pod-cache grace + a 2 s requeue)."""
CONVERGE_TIMEOUT = 60.0
"""Operator seconds a claim set may take to converge."""


def run_options(
    *,
    time_scale: float = TIME_SCALE,
    finalize_timeout: float = FINALIZE_TIMEOUT,
    retry_budget: int = RETRY_BUDGET,
    migration_timeout: float = MIGRATION_TIMEOUT,
) -> CheckOptions:
    """Invariant thresholds in wall seconds (operator-time values scaled by ``time_scale``).

    The retry window is the finalize window: a claim may be retried ``retry_budget``
    times in the time it is allowed to take.
    """
    s = time_scale
    return CheckOptions(
        finalize_timeout=finalize_timeout * s,
        retry_budget=retry_budget,
        retry_window=finalize_timeout * s,
        grace=GRACE * s,
        migration_timeout=migration_timeout * s,
        converge_timeout=CONVERGE_TIMEOUT * s,
        time_scale=s,
    )


def override(
    options: CheckOptions,
    *,
    time_scale: float | None = None,
    finalize_timeout: float | None = None,
    retry_budget: int | None = None,
    migration_timeout: float | None = None,
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
    if options.retry_budget < 0:
        raise UsageError(
            f"invariant option retry_budget={options.retry_budget} is negative",
            hint="use a count >= 0",
        )
    if options.time_scale <= 0:
        raise UsageError(
            f"invariant option time_scale={options.time_scale} is not positive",
            hint="use a factor > 0 (1.0 = the operator's own intervals)",
        )
