"""Fixtures of the report tests: the stored seed-race history and its case file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mochaos.observe.history import History
from mochaos.report.result import ScenarioResult

DATA = Path(__file__).with_name("data")


@pytest.fixture(scope="session")
def seed_case() -> dict[str, Any]:
    """Title, meta and ScenarioResult dict of the seed race."""
    return json.loads((DATA / "seed_race.case.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def seed_history() -> History:
    """The seed race as recorded (History.to_jsonl format)."""
    return History.from_jsonl(DATA / "seed_race.history.jsonl")


@pytest.fixture(scope="session")
def seed_result(seed_case: dict[str, Any]) -> ScenarioResult:
    """The seed race's ScenarioResult (verdicts included)."""
    return ScenarioResult.from_dict(seed_case["result"])
