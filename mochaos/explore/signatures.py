"""Failures grouped by signature (violated invariants + bug IDs), each with its smallest case.

The smallest case of a signature has the fewest faults, then the earliest point; its flake
rate is read from its own runs only (the first and the ``--repeat`` re-runs). A failing
pair is *shrunk*: when one of its two single faults fails with the same signature above
the flake threshold, that single is the answer; otherwise the pair needs both.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mochaos.explore.plan import LEARN, Case, Exploration


def signature_of(invariants: list[str], bugs: list[str]) -> str:
    """``finalizer-completes,no-label-residue [B1,B5]``."""
    return f"{','.join(sorted(invariants))} [{','.join(sorted(bugs)) or '-'}]"


@dataclass
class Signature:
    """One kind of failure and where it was found."""

    signature: str
    invariants: list[str]
    bugs: list[str]
    smallest: str
    """The id of the smallest case failing with it."""
    smallest_label: str
    timeline: str
    cases: list[str]
    """Every case that failed with it at least once."""
    runs: int
    """Runs of the smallest case with a verdict."""
    reproduced: int
    """Of those, how many failed with this signature."""
    needs_both: bool = False
    """The smallest case is a pair whose single faults do not fail alone."""
    without_fault: bool = False
    """The learn run (no fault) failed with it: not caused by an injected fault."""

    @property
    def flake_rate(self) -> float:
        """Share of the smallest case's decided runs that did not reproduce it."""
        return 1 - self.reproduced / self.runs if self.runs else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, flake rate included."""
        return asdict(self) | {"flake_rate": round(self.flake_rate, 3)}


def case_label(exploration: Exploration, case: Case) -> str:
    """``p05 source pod: phase Bound → Draining ⇒ scale-in migrating set`` (+ for pairs)."""
    if not case.steps:
        return "learn run (no fault)"
    return " + ".join(
        f"{s.point} {exploration.point(s.point).label} ⇒ {s.fault.label}" for s in case.steps
    )


def size_key(exploration: Exploration, case: Case) -> tuple[int, float, str]:
    """Fewest faults first, then the earliest point."""
    first = min((exploration.point(s.point).first_seen for s in case.steps), default=0.0)
    return (len(case.steps), first, case.id)


def group(exploration: Exploration) -> list[Signature]:
    """Every signature found, smallest case first within each, in order of that case."""
    by_sig: dict[str, list[Case]] = {}
    details: dict[str, tuple[list[str], list[str]]] = {}
    for case in exploration.cases.values():
        for run in case.runs:
            if run.outcome == "failed":
                cases = by_sig.setdefault(run.signature, [])
                if case not in cases:
                    cases.append(case)
                details[run.signature] = (run.invariants, run.bugs)
    found = []
    for sig, cases in by_sig.items():
        failing = [c for c in cases if c.failing(sig)] or cases
        smallest = min(failing, key=lambda c: size_key(exploration, c))
        timeline = next(
            (r.timeline for r in smallest.runs if r.outcome == "failed" and r.signature == sig), ""
        )
        decided = smallest.decided
        invariants, bugs = details[sig]
        found.append(
            Signature(
                signature=sig, invariants=sorted(invariants), bugs=sorted(bugs),
                smallest=smallest.id, smallest_label=case_label(exploration, smallest),
                timeline=timeline, cases=sorted(c.id for c in cases), runs=len(decided),
                reproduced=sum(1 for r in decided if r.outcome == "failed" and r.signature == sig),
                needs_both=len(smallest.steps) > 1, without_fault=smallest.id == LEARN,
            )
        )  # fmt: skip
    return sorted(found, key=lambda s: size_key(exploration, exploration.cases[s.smallest]))
