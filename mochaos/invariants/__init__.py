"""The ten invariants of DESIGN §6: pure functions from a recorded History to Verdicts.

``ALL`` lists them in the design's order, ``get`` finds one by ID, and
``evaluate`` runs them all, continuously during a run (``final=False``) or at
settle time (``final=True``).
"""

from __future__ import annotations

from mochaos.errors import UsageError
from mochaos.invariants import (
    bound_has_pod,
    finalizer_completes,
    migration_completes,
    no_label_residue,
    no_leaked_pods,
    pod_claim_agreement,
    replicas_converge,
    retry_budget,
    scalein_skips_migrating,
    single_binding,
)
from mochaos.invariants.base import InvariantBase
from mochaos.invariants.judged import judged, on_wall_clock
from mochaos.types import CheckOptions, History, Verdict

ALL: tuple[InvariantBase, ...] = (
    finalizer_completes.INVARIANT,
    no_label_residue.INVARIANT,
    single_binding.INVARIANT,
    bound_has_pod.INVARIANT,
    scalein_skips_migrating.INVARIANT,
    migration_completes.INVARIANT,
    replicas_converge.INVARIANT,
    retry_budget.INVARIANT,
    pod_claim_agreement.INVARIANT,
    no_leaked_pods.INVARIANT,
)

_BY_ID = {invariant.id: invariant for invariant in ALL}


def get(invariant_id: str) -> InvariantBase:
    """The invariant with this ID; KeyError naming the known IDs otherwise."""
    try:
        return _BY_ID[invariant_id]
    except KeyError:
        raise KeyError(f"unknown invariant {invariant_id!r}; known: {', '.join(_BY_ID)}") from None


def evaluate(history: History, options: CheckOptions, *, final: bool) -> list[Verdict]:
    """One Verdict per invariant, in ``ALL`` order.

    ``final=False`` is the continuous evaluation during a run: settle-only
    invariants are skipped ("evaluated at settle") and nothing is reported whose
    deadline has not passed by ``history.end``. ``final=True`` is the settle
    evaluation at the end of the scenario.
    """
    validate_options(options)
    view, clock = judged(history)
    return [on_wall_clock(inv.check(view, options, final=final), clock) for inv in ALL]


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


__all__ = ["ALL", "InvariantBase", "evaluate", "get", "validate_options"]
