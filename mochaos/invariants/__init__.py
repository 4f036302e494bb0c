"""The invariants of docs/invariants.md: pure functions from a recorded History to Verdicts.

``ALL`` lists them in report order (found by discovery, :mod:`.registry`) and ``get``
finds one by ID. ``IncrementalChecker`` judges a growing history (the scenario's monitor
and settle);
``evaluate`` judges a whole history at once, continuously (``final=False``) or at
settle time (``final=True``), with the same result as feeding it entry by entry.
"""

from __future__ import annotations

from collections.abc import Sequence

from mochaos.config import CheckOptions
from mochaos.invariants import registry
from mochaos.invariants.base import InvariantBase
from mochaos.invariants.checker import IncrementalChecker
from mochaos.invariants.checker import evaluate as _evaluate_in_order
from mochaos.invariants.judged import judged, on_wall_clock
from mochaos.invariants.options import validate_options
from mochaos.invariants.registry import ALL, get
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import History


def evaluate(
    history: History,
    options: CheckOptions,
    *,
    final: bool,
    now: float | None = None,
    invariants: Sequence[InvariantBase] | None = None,
) -> list[Verdict]:
    """One Verdict per invariant of ``invariants`` (default: every registered one), in
    order, judged on the history as the apiserver
    ordered it (resourceVersion order) and on a clock that leaves out apiserver outages
    (see :mod:`mochaos.invariants.judged`); violation times back on the wall clock.

    ``final=False`` is the continuous evaluation during a run: settle-only invariants are
    skipped and nothing is reported whose deadline has not passed by the history's end, or
    by ``now`` (wall time) when given.
    """
    validate_options(options)
    view, clock = judged(history)
    at = None if now is None else clock.operator_time(now)
    chosen = registry.ALL if invariants is None else invariants
    verdicts = _evaluate_in_order(view, options, chosen, final=final, now=at)
    return [on_wall_clock(v, clock) for v in verdicts]


__all__ = ["ALL", "IncrementalChecker", "InvariantBase", "evaluate", "get", "validate_options"]
