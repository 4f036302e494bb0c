"""The run's monitor judges on the operator's clock, as the verdict does: an apiserver
outage does not count towards a deadline, so settling waits it out as the verdict would."""

from __future__ import annotations

import time

from mochaos.config import CheckOptions
from mochaos.observe.history import APISERVER_OUTAGE, DEPENDENCY_OUTAGE, PeriodKind
from mochaos.scenario._checker import Monitor

from support.builders import HistoryBuilder, bind
from support.journal_standin import RevealedJournal


def _deleted_65s_ago(
    *, outage: float, kind: PeriodKind = APISERVER_OUTAGE, subject: str = "apiserver"
) -> Monitor:
    now = time.time()
    b = HistoryBuilder()
    bind(b, "X", "B")
    b.at(now - 65).claim("X", deleting=True)
    if outage:
        b.at(now - 40).period(kind, "start", subject)
        b.at(now - 40 + outage).period(kind, "end", subject)
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
    monitor = _deleted_65s_ago(outage=15.0, kind=DEPENDENCY_OUTAGE, subject="matrixone")
    now = monitor.update()
    assert monitor.activity(now).in_flight == ["deleting X"]
    assert "finalizer-completes" not in monitor.detections
