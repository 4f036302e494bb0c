"""The live monitor announces a failure only when the history, as the verdict judges it
(resourceVersion order, the outage-free clock), fails it too: a live "violated" line and a
detection latency are never ones the verdict does not give.

Red evidence: with the monitor announcing what its incremental checker saw (the code
before this test), the first test records a detection and logs the line.
"""

from __future__ import annotations

import logging
import time

import pytest

from mochaos.config import CheckOptions
from mochaos.invariants import evaluate
from mochaos.invariants.verdict import Verdict, Violation
from mochaos.observe.history import History, Marker
from mochaos.scenario import _checker as checker
from mochaos.scenario._checker import Monitor

from support.builders import HistoryBuilder, bind
from support.journal_standin import RevealedJournal

OPTIONS = CheckOptions(finalize_timeout=60)


class _SaysFailed:
    """An incremental checker that reports ``invariant`` failed on the first entry it is
    fed, whatever the history (the receive-order view disagreeing with the judged one)."""

    def __init__(self, invariant: str = "single-binding") -> None:
        self.invariant = invariant
        self.said = False

    def feed(self, entries: list) -> list[Verdict]:
        if self.said or not entries:
            return []
        self.said = True
        violation = Violation(t=time.time(), seq=1, objects=("Pod/B",), message="stand-in")
        return [Verdict(self.invariant, "fail", violation=violation)]

    def poll(self, now: float) -> list[Verdict]:
        return []


def _bound() -> list:
    b = HistoryBuilder()
    bind(b, "X", "A")
    bind(b, "Z", "B", claimset="S2")
    return list(b.build())


def _live_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "violated" in r.getMessage()]


def test_a_failure_the_judged_history_does_not_give_is_not_announced(caplog) -> None:
    journal = RevealedJournal(_bound(), shown=0)
    journal.reveal(len(journal.entries))
    monitor = Monitor(journal, OPTIONS)  # type: ignore[arg-type]
    monitor.invariants = _SaysFailed()  # type: ignore[assignment]
    with caplog.at_level(logging.INFO, logger="mochaos"):
        monitor.update()
    assert monitor.detections == {}
    assert monitor.pending == {"single-binding"}
    assert _live_lines(caplog) == []


def _stuck() -> RevealedJournal:
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(time.time() - 65).claim("X", deleting=True)  # past its 60 s finalize window
    return RevealedJournal(list(b.build()), shown=0)


def test_a_failure_both_views_give_is_announced_once_and_the_verdict_gives_it(caplog) -> None:
    journal = _stuck()
    journal.reveal(1)
    monitor = Monitor(journal, OPTIONS)  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO, logger="mochaos"):
        monitor.update()
        assert "finalizer-completes" not in monitor.detections
        journal.reveal(len(journal.entries))
        monitor.update()
        monitor.update()
    assert "finalizer-completes" in monitor.detections
    lines = [line for line in _live_lines(caplog) if "finalizer-completes" in line]
    assert len(lines) == 1
    entries = list(journal.history())
    settled = Marker(seq=max(e.seq for e in entries) + 1, t=time.time(), label="settled")
    history = History([*entries, settled])  # the scenario marks the end of settle so
    final = evaluate(history, OPTIONS, final=True)
    assert {d for d in monitor.detections} <= {v.invariant for v in final if v.failed}


def test_a_pending_failure_is_announced_once_the_judged_history_gives_it(
    caplog, monkeypatch
) -> None:
    monkeypatch.setattr(checker, "RECONFIRM_EVERY", 0.0)
    journal = _stuck()
    journal.reveal(1)  # the bind only: nothing to fail yet in the judged history
    monitor = Monitor(journal, OPTIONS)  # type: ignore[arg-type]
    monitor.invariants = _SaysFailed("finalizer-completes")  # type: ignore[assignment]
    with caplog.at_level(logging.INFO, logger="mochaos"):
        monitor.update()
        assert monitor.pending == {"finalizer-completes"} and monitor.detections == {}
        journal.reveal(len(journal.entries))
        monitor.update()
    assert "finalizer-completes" in monitor.detections and monitor.pending == set()
    assert len(_live_lines(caplog)) == 1
