"""What an invariant says about one history: a :class:`Verdict`, with the first
:class:`Violation` when it failed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

Status: TypeAlias = Literal["pass", "fail", "skipped"]
"""An invariant's verdict on one history."""


@dataclass(frozen=True, slots=True)
class Violation:
    """The first observation that broke an invariant."""

    t: float
    seq: int
    objects: tuple[str, ...]
    message: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one invariant over one history."""

    invariant: str
    status: Status
    bugs: tuple[str, ...] = ()
    severity: str = "error"
    violation: Violation | None = None
    note: str = ""

    @property
    def failed(self) -> bool:
        """True when the invariant was violated."""
        return self.status == "fail"
