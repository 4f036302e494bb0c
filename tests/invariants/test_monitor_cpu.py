"""The invariant monitor accounts for the CPU it spends (bench/soak.py reads it)."""

from __future__ import annotations

from mochaos.config import CheckOptions
from mochaos.observe.history import History
from mochaos.scenario.checker import Monitor

from .synthetic import synthetic


class _Journal:
    """A recorder's journal over a fixed history, handed out in slices."""

    def __init__(self, entries: list) -> None:
        self.entries = entries
        self.shown = 0

    def reveal(self, n: int) -> None:
        self.shown = min(len(self.entries), self.shown + n)

    def journal(self, since: int = 0):
        items = self.entries[since : self.shown]
        return items, since + len(items)

    def history(self) -> History:
        return History(self.entries[: self.shown])


def test_the_monitor_counts_the_cpu_of_its_updates():
    rec = _Journal(list(synthetic(5_000, seed=7, faults=0.1)))
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
