"""The exploration's record: points, cases and their runs, and ``exploration.json``.

A case is a list of steps (a point and the fault injected there); the learn run is the
case with none. Each run of a case keeps its outcome, its signature when it failed and
its timeline. The file says which target it explored, so ``--resume`` only reuses
decisions made on the same target, workload and time scale.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mochaos.errors import UsageError
from mochaos.explore.matrix import RoleFault
from mochaos.explore.points import Point

FORMAT = 1
"""The version of exploration.json's layout."""
LEARN = "learn"
"""The id of the learn run (the case without a fault)."""

FAILING_RATE = 0.5
"""A case counts as failing with a signature only when more than this share of its decided
runs failed with it: one failure in many runs is flaky, never a shrinking result."""


@dataclass(frozen=True)
class Step:
    """One fault at one point."""

    point: str
    fault: RoleFault

    @property
    def slug(self) -> str:
        """``p03-scale-in.migrating-set``."""
        return f"{self.point}-{self.fault.slug}"


def case_id(steps: tuple[Step, ...] | list[Step]) -> str:
    """The learn run's id, or the steps' slugs joined by ``+``."""
    return "+".join(s.slug for s in steps) if steps else LEARN


@dataclass
class Run:
    """One run of a case: what its test reported."""

    outcome: str
    signature: str = ""
    invariants: list[str] = field(default_factory=list)
    bugs: list[str] = field(default_factory=list)
    timeline: str = ""
    seed: int | None = None
    duration: float = 0.0
    message: str = ""


@dataclass
class Case:
    """A cell of the matrix: its steps and every run of it so far."""

    steps: tuple[Step, ...]
    runs: list[Run] = field(default_factory=list)

    @property
    def id(self) -> str:
        """See :func:`case_id`."""
        return case_id(self.steps)

    @property
    def decided(self) -> list[Run]:
        """The runs with a verdict (passed or failed)."""
        return [r for r in self.runs if r.outcome in ("passed", "failed")]

    def fail_rate(self, signature: str | None = None) -> float | None:
        """Share of decided runs that failed (with ``signature`` when given)."""
        decided = self.decided
        if not decided:
            return None
        bad = [r for r in decided if r.outcome == "failed" and signature in (None, r.signature)]
        return len(bad) / len(decided)

    def failing(self, signature: str | None = None) -> bool:
        """Failing above the flake threshold (:data:`FAILING_RATE`)."""
        rate = self.fail_rate(signature)
        return rate is not None and rate > FAILING_RATE

    @property
    def status(self) -> str:
        """``pass``, ``fail``, ``flaky``, ``inconclusive``, ``error`` or ``unexplored``."""
        outcomes = {r.outcome for r in self.runs}
        if "failed" in outcomes:
            signatures = {r.signature for r in self.runs if r.outcome == "failed"}
            return "flaky" if "passed" in outcomes or len(signatures) > 1 else "fail"
        if "passed" in outcomes:
            return "pass"
        if "inconclusive" in outcomes:
            return "inconclusive"
        return "error" if outcomes else "unexplored"

    @property
    def is_decided(self) -> bool:
        """A verdict exists: resuming does not run it again."""
        return bool(self.decided)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "id": self.id,
            "steps": [{"point": s.point, "fault": s.fault.kind, "target": s.fault.target}
                      for s in self.steps],
            "status": self.status,
            "runs": [vars(r) for r in self.runs],
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Case:
        """Inverse of :meth:`to_dict`."""
        steps = tuple(
            Step(s["point"], RoleFault(s["fault"], s.get("target", ""))) for s in data["steps"]
        )
        return cls(steps=steps, runs=[Run(**r) for r in data.get("runs", [])])


@dataclass
class Exploration:
    """Everything ``exploration.json`` holds."""

    workload: str
    target: dict[str, str]
    """``operator`` (the spec) and ``version`` (what it resolved to)."""
    time_scale: float = 1.0
    fault_kinds: list[str] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    cases: dict[str, Case] = field(default_factory=dict)
    learn: dict[str, Any] = field(default_factory=dict)
    """The learn run: outcome, timeline, seconds, point-extraction seconds."""
    signatures: list[dict[str, Any]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    """One entry per explore invocation: budget, depth, cases run, wall seconds."""
    batch: dict[str, int] = field(default_factory=dict)
    """In a batch file only: case id -> how many runs of it this batch makes (empty: every
    case once)."""

    def point(self, point_id: str) -> Point:
        """The point with that id."""
        for p in self.points:
            if p.id == point_id:
                return p
        raise KeyError(point_id)

    def same_target(self, other: Exploration) -> bool:
        """Whether decisions of ``other`` hold for this exploration."""
        return (
            self.workload == other.workload
            and self.target == other.target
            and self.time_scale == other.time_scale
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "format": FORMAT,
            "workload": self.workload,
            "target": self.target,
            "time_scale": self.time_scale,
            "fault_kinds": self.fault_kinds,
            "learn": self.learn,
            "points": [p.to_dict() for p in self.points],
            "cases": [c.to_dict() for c in self.cases.values()],
            "signatures": self.signatures,
            "history": self.history,
            **({"batch": self.batch} if self.batch else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Exploration:
        """Inverse of :meth:`to_dict`."""
        cases = [Case.from_dict(c) for c in data.get("cases", [])]
        return cls(
            workload=data["workload"],
            target=dict(data["target"]),
            time_scale=float(data.get("time_scale", 1.0)),
            fault_kinds=list(data.get("fault_kinds", [])),
            points=[Point.from_dict(p) for p in data.get("points", [])],
            cases={c.id: c for c in cases},
            learn=dict(data.get("learn", {})),
            signatures=list(data.get("signatures", [])),
            history=list(data.get("history", [])),
            batch={k: int(v) for k, v in (data.get("batch") or {}).items()},
        )

    def save(self, path: Path) -> Path:
        """Write the file atomically; return its path."""
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path


def merge_explorations(shards: list[Exploration], names: list[str]) -> Exploration:
    """One exploration of the shards' runs (every case's runs, from whichever shard ran it).
    The shards must have explored the same workload on the same target from the same learn
    run (same points): UsageError naming the odd one out otherwise."""
    first = shards[0]
    for shard, name in zip(shards[1:], names[1:], strict=True):
        if not first.same_target(shard) or first.points != shard.points:
            raise UsageError(
                f"{name} is not a shard of the exploration {names[0]} is one of (target, "
                "workload, time scale or learn run differ)",
                hint="merge the shards that resumed one learn run (explore --learn-only)",
            )
    merged = Exploration.from_dict(first.to_dict())
    merged.cases, merged.history, merged.signatures = {}, [], []
    for shard in shards:
        for case in shard.cases.values():
            if case.id not in merged.cases:
                merged.cases[case.id] = Case(steps=case.steps)
            if case.id != LEARN or not merged.cases[case.id].runs:
                merged.cases[case.id].runs.extend(case.runs)
        merged.history += shard.history
    return merged


COPY_SEPARATOR = "~"
"""Test ids of the extra runs of one case in a batch: ``<case id>~2``, ``~3``, …"""


def batch_runs(exploration: Exploration) -> list[tuple[str, Case]]:
    """The test id of every run a batch makes, with its case."""
    if not exploration.batch:
        return [(c.id, c) for c in exploration.cases.values()]
    ids = []
    for case_id_, copies in exploration.batch.items():
        case = exploration.cases[case_id_]
        ids += [(case.id if i == 1 else f"{case.id}{COPY_SEPARATOR}{i}", case)
                for i in range(1, copies + 1)]  # fmt: skip
    return ids


def case_of_test(test_id: str) -> str:
    """The case id of a test id (:func:`test_ids`)."""
    return test_id.split(COPY_SEPARATOR, 1)[0]


def load(path: Path) -> Exploration:
    """Read an exploration file; UsageError (one line) when it is missing or not one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise UsageError(
            f"cannot read {path}: {err.strerror}", hint="give an exploration.json"
        ) from err
    except ValueError as err:
        raise UsageError(f"{path} is not JSON: {err}", hint="give an exploration.json") from err
    if not isinstance(data, dict) or data.get("format") != FORMAT or "workload" not in data:
        raise UsageError(
            f"{path} is not an exploration file (format {FORMAT})",
            hint="give the exploration.json that `python -m mochaos explore` wrote",
        )
    return Exploration.from_dict(data)
