"""The run's monitor judges on the operator's clock, as the verdict does: an apiserver
outage does not count towards a deadline, so settling waits it out as the verdict would."""

from __future__ import annotations

import time

from invariants.builders import HistoryBuilder, bind

from mochaos.config import CheckOptions
from mochaos.observe.history import (
    APISERVER_AVAILABLE,
    APISERVER_UNAVAILABLE,
    DEPENDENCY_AVAILABLE,
    DEPENDENCY_UNAVAILABLE,
)
from mochaos.scenario.checker import Monitor

from journal_standin import RevealedJournal


def _deleted_65s_ago(
    *, outage: float, opens: str = APISERVER_UNAVAILABLE, closes: str = APISERVER_AVAILABLE
) -> Monitor:
    now = time.time()
    b = HistoryBuilder()
    bind(b, "X", "B")
    b.at(now - 65).claim("X", deleting=True)
    if outage:
        b.at(now - 40).marker(opens)
        b.at(now - 40 + outage).marker(f"{closes} after {outage:.1f}s")
    journal = RevealedJournal(list(b.build()))
    return Monitor(journal, CheckOptions(finalize_timeout=60))  # type: ignore[arg-type]


def test_an_outage_inside_the_finalize_window_keeps_the_claim_in_flight() -> None:
    monitor = _deleted_65s_ago(outage=15.0)
    now = monitor.update()
    busy = monitor.activity(now).in_flight
    assert busy == ["deleting X"]  # 50 s of operator time: the deadline is ahead
    assert "finalizer-completes" not in monitor.detections


def test_without_an_outage_the_deadline_has_passed() -> None:
    monitor = _deleted_65s_ago(outage=0.0)
    now = monitor.update()
    busy = monitor.activity(now).in_flight
    assert busy == []
    assert "finalizer-completes" in monitor.detections


def test_a_dependency_down_inside_the_finalize_window_stops_the_clock_too() -> None:
    monitor = _deleted_65s_ago(
        outage=15.0,
        opens=f"{DEPENDENCY_UNAVAILABLE}: matrixone (not running)",
        closes=f"{DEPENDENCY_AVAILABLE}: matrixone",
    )
    now = monitor.update()
    assert monitor.activity(now).in_flight == ["deleting X"]
    assert "finalizer-completes" not in monitor.detections
