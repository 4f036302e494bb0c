"""The history of qualifications across builds: one JSON file per qualification.

``qualify --history <dir>`` appends each qualification to ``<dir>/runs/``: the target, its
build (the version the target reported: a commit, an image digest), per scenario every run's
outcome, its status, violated invariants and flake counts, and a copy of one of its timelines
under ``<dir>/timelines/``. Records of one build are read together (their runs add up);
:mod:`mochaos.report.grid` draws them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mochaos.errors import UsageError
from mochaos.report.qualify import MISSING, ScenarioRecord
from mochaos.report.rundir import LATEST
from mochaos.report.stats import wilson_interval
from mochaos.report.summary import OUTCOMES, SUMMARY_FILE
from mochaos.testids import scenario_name

RUNS = "runs"
TIMELINES = "timelines"
SCHEMA = 1
"""The record format; a store written by a newer mo-chaos is refused, not misread."""
NOT_RUN = "not run"


def append(history: Path, qdir: Path) -> Path:
    """Add the qualification in ``qdir`` to the store ``history``; return the record's path."""
    report = json.loads((qdir / "qualification.json").read_text(encoding="utf-8"))
    now = datetime.now(UTC)
    rid = f"{now:%Y%m%dT%H%M%S%fZ}-{report['qualification_id']}"
    timelines = _timelines(report)
    scenarios = {}
    for s in report["scenarios"]:
        name = scenario_name(s["nodeid"])
        link = None
        if name in timelines:
            dest = history / TIMELINES / rid / f"{re.sub(r'[^A-Za-z0-9._@=-]+', '_', name)}.html"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(timelines[name], dest)
            link = dest.relative_to(history).as_posix()
        scenarios[name] = {
            "nodeid": s["nodeid"],
            "status": s["status"],
            "outcomes": s["outcomes"],
            "counts": {o: int(s.get(o, 0)) for o in (*OUTCOMES, MISSING)},
            "failed_invariants": sorted(s.get("failed_invariants") or []),
            "timeline": link,
        }
    record = {
        "schema": SCHEMA,
        "id": rid,
        "recorded_at": now.isoformat(timespec="microseconds"),
        "target": report["operator"],
        "build": report.get("operator_version") or report["operator"],
        "cluster": report.get("cluster_provider") or report.get("cluster"),
        "k8s_version": report.get("k8s_version"),
        "keyword": report.get("keyword"),
        "repeat": report.get("repeat"),
        "exit_code": report["exit_code"],
        "conclusion": report.get("conclusion", ""),
        "scenarios": scenarios,
    }
    path = history / RUNS / f"{rid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _timelines(report: dict[str, Any]) -> dict[str, Path]:
    """Per scenario, the timeline of its first failed run, else of its last run."""
    found: dict[str, tuple[Path, bool]] = {}
    for run in report.get("runs", []):
        path = Path(run["reports_dir"]) / LATEST / SUMMARY_FILE
        try:
            tests = json.loads(path.read_text(encoding="utf-8")).get("tests", [])
        except (OSError, ValueError):
            continue
        for test in tests:
            name = scenario_name(str(test.get("nodeid")))
            timeline = (test.get("artifacts") or {}).get("timeline_html")
            if timeline and Path(timeline).is_file() and not found.get(name, (None, False))[1]:
                found[name] = (Path(timeline), test.get("outcome") == "failed")
    return {name: path for name, (path, _) in found.items()}


def load(history: Path) -> list[dict[str, Any]]:
    """Every record of the store, oldest first (an absent store has none)."""
    records = []
    for path in sorted((history / RUNS).glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise UsageError(
                f"history record {path} is unreadable: {err}", hint="remove or restore that file"
            ) from err
        if record.get("schema", 0) > SCHEMA:
            raise UsageError(
                f"history record {path} has schema {record['schema']}",
                hint="it was written by a newer mo-chaos: upgrade to read it",
            )
        records.append(record)
    return sorted(records, key=lambda r: (r["recorded_at"], r["id"]))


@dataclass
class Cell:
    """One scenario on one build: the runs of every record of that build added up."""

    outcomes: list[str] = field(default_factory=list)
    failed_invariants: list[str] = field(default_factory=list)
    timeline: str | None = None
    timeline_failed: bool = False

    @property
    def status(self) -> str:
        """pass, fail, flaky, no verdict (only errors, inconclusive or missing) or not run."""
        return ScenarioRecord("", self.outcomes).status if self.outcomes else NOT_RUN

    @property
    def signature(self) -> tuple[str, tuple[str, ...]]:
        """What a change between builds is judged on: status and violated invariants."""
        return self.status, tuple(self.failed_invariants)

    def count(self, outcome: str) -> int:
        """How many runs ended with ``outcome``."""
        return self.outcomes.count(outcome)


@dataclass
class Build:
    """One build (a commit, an image digest) and its cells, over all its records."""

    build: str
    target: str
    first_seen: str
    last_seen: str = ""
    records: int = 0
    cells: dict[str, Cell] = field(default_factory=dict)


def builds(records: list[dict[str, Any]]) -> list[Build]:
    """The records grouped by build, in the order each build was first qualified."""
    by_build: dict[str, Build] = {}
    for record in records:
        b = by_build.setdefault(
            record["build"], Build(record["build"], record["target"], record["recorded_at"])
        )
        b.last_seen, b.target, b.records = record["recorded_at"], record["target"], b.records + 1
        for name, s in record["scenarios"].items():
            cell = b.cells.setdefault(name, Cell())
            cell.outcomes += s["outcomes"]
            cell.failed_invariants = sorted({*cell.failed_invariants, *s["failed_invariants"]})
            failed = "failed" in s["outcomes"]
            if s.get("timeline") and (failed or not cell.timeline_failed):
                cell.timeline, cell.timeline_failed = s["timeline"], failed
    return list(by_build.values())


def last_good(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The newest record whose qualification passed every scenario every run."""
    return next((r for r in reversed(records) if r["exit_code"] == 0), None)


@dataclass(frozen=True)
class Flake:
    """A scenario that both passed and failed on one build, with its failure rate."""

    scenario: str
    build: str
    failed: int
    decided: int

    @property
    def rate(self) -> float:
        """Share of the runs with a verdict that failed."""
        return self.failed / self.decided

    @property
    def interval(self) -> tuple[float, float]:
        """The rate's 95 % Wilson interval."""
        return wilson_interval(self.failed, self.decided)


@dataclass
class Changes:
    """The newest build against the one before it, and the flaky scenarios in view."""

    regressed: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    """Signature changes that are neither (other violated invariants, flaky to pass, …)."""
    flaky: list[Flake] = field(default_factory=list)


def changed_from_previous(columns: list[Build], index: int, name: str) -> bool:
    """Whether ``name``'s signature on build ``index`` differs from the last build before it
    that ran the scenario (False when none did, or it did not run on ``index``)."""
    cell = columns[index].cells.get(name)
    if cell is None:
        return False
    before = next((b.cells[name] for b in reversed(columns[:index]) if name in b.cells), None)
    return before is not None and before.signature != cell.signature


def changes(columns: list[Build]) -> Changes:
    """Regressed, fixed and changed scenarios of the newest build; flaky ones of every build."""
    found = Changes()
    if columns:
        newest = columns[-1]
        for name in sorted(newest.cells):
            if not changed_from_previous(columns, len(columns) - 1, name):
                continue
            old = next(b.cells[name] for b in reversed(columns[:-1]) if name in b.cells).status
            new = newest.cells[name].status
            if old == "pass" and new in ("fail", "flaky"):
                found.regressed.append(name)
            elif old == "fail" and new == "pass":
                found.fixed.append(name)
            else:
                found.changed.append(name)
    for b in reversed(columns):
        for name, cell in sorted(b.cells.items()):
            if cell.status == "flaky":
                decided = cell.count("passed") + cell.count("failed")
                found.flaky.append(Flake(name, b.build, cell.count("failed"), decided))
    return found
