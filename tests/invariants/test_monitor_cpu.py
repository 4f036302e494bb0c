"""The invariant monitor accounts for the CPU it spends (bench/cost/soak.py reads it)."""

from __future__ import annotations

from mochaos.config import CheckOptions
from mochaos.scenario._checker import Monitor

from support.journal_standin import RevealedJournal
from support.synthetic import synthetic


def test_the_monitor_counts_the_cpu_of_its_updates():
    rec = RevealedJournal(list(synthetic(5_000, seed=7, faults=0.1)), shown=0)
    monitor = Monitor(rec, CheckOptions())  # type: ignore[arg-type]
    monitor.update()
    idle = monitor.cpu
    rec.reveal(len(rec.entries))
    monitor.update()
    judged = monitor.cpu - idle
    # Judging 5000 entries costs CPU; an update with nothing new costs next to none.
    assert judged > 0.001
    before = monitor.cpu
    monitor.update()
    assert monitor.cpu - before < judged / 10
