"""The one exit-status table of mo-chaos: pytest runs, ``qualify``, ``explore``, ``merge``
and ``check`` exit by it, so that CI reading only the status tells an operator bug from a
broken machine and from a run that could not judge.

| status | meaning |
|---|---|
| 0 | every scenario passed (and nothing else in the run failed) |
| 1 | the operator failed at least one scenario: an invariant was violated |
| 2 | usage error of the ``mochaos`` command (under pytest, 2 is pytest's "interrupted") |
| 3 | infrastructure error: nothing failed, but a scenario or a run broke |
| 4 | usage error under pytest: pytest's own code, also for its own options |
| 5 | no scenario selected (pytest's own code; qualify and explore say it as a usage error) |
| 6 | inconclusive: nothing failed or broke, but a scenario judged nothing (a missed window) |

The rule for usage errors: each front end keeps its host's code (argparse's 2 for the
command, pytest's 4 under pytest), and the commands that run pytest as a child turn its 4
into their 2. The outcome of a run is read from its ``summary.json`` counts
(:func:`of_counts`), the one summary every front end reads.
"""

from __future__ import annotations

from collections.abc import Mapping

OK = 0
OPERATOR_FAILED = 1
USAGE = 2
INFRA = 3
PYTEST_USAGE = 4
NO_TESTS = 5
INCONCLUSIVE = 6

SEVERITY = (OK, INCONCLUSIVE, OPERATOR_FAILED, INFRA, USAGE)
"""Least to most severe, for combining the statuses of several runs: a usage error hides
everything, a broken run hides a verdict, a failure hides an inconclusive run."""


def of_counts(counts: Mapping[str, int], *, usage_errors: int = 0, usage: int = USAGE) -> int:
    """The status of a run from its outcome counts (``summary.json``'s ``counts``): a
    failure first, then a usage error (``usage``: the front end's code for it, the
    command's 2 or pytest's 4), then an infrastructure error, then an inconclusive
    scenario."""
    if counts.get("failed"):
        return OPERATOR_FAILED
    if usage_errors:
        return usage
    if counts.get("error"):
        return INFRA
    if counts.get("inconclusive"):
        return INCONCLUSIVE
    return OK


PYTEST_BROKE = {2: "interrupted", PYTEST_USAGE: "usage error"}
"""Statuses of a pytest run that say it broke whatever its summary holds."""


def of_summary(summary: Mapping[str, object], *, usage: int = USAGE) -> int:
    """:func:`of_counts` of a run's ``summary.json``."""
    counts = summary.get("counts") or {}
    return of_counts(counts, usage_errors=int(summary.get("usage_errors") or 0),  # type: ignore[arg-type]
                     usage=usage)  # fmt: skip


def unexplained(code: int, summary: Mapping[str, object]) -> str:
    """Why a child pytest run's status says it broke, "" when its summary's outcomes explain
    it: interrupted, or a status the outcomes do not give (pytest's internal error, a
    failure outside the scenarios, its arguments refused before any scenario ran)."""
    if code == 2:
        return f"pytest exit {code} ({PYTEST_BROKE[code]})"
    expected = of_summary(summary, usage=PYTEST_USAGE)
    if code != expected:
        return f"pytest exit {code}, but its summary's outcomes say {expected}"
    return ""


def worst(codes: list[int]) -> int:
    """The most severe of several statuses (:data:`SEVERITY`; an unknown one counts as a
    broken run)."""
    rank = {code: i for i, code in enumerate(SEVERITY)}
    return max(codes, key=lambda c: rank.get(c, rank[INFRA]), default=OK)
