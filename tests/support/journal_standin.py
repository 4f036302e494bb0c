"""A recorder as the invariant monitor reads it: its journal and its history, over a fixed
list of entries revealed a few at a time (the monitor tests' one stand-in)."""

from __future__ import annotations

from mochaos.observe.history import Entry, History


class RevealedJournal:
    """``entries`` as a recorder would have recorded them, ``shown`` of them so far."""

    def __init__(self, entries: list[Entry], *, shown: int | None = None) -> None:
        self.entries = entries
        self.shown = len(entries) if shown is None else shown

    def reveal(self, n: int) -> None:
        """Show ``n`` more entries (at most all)."""
        self.shown = min(len(self.entries), self.shown + n)

    def journal(self, since: int = 0) -> tuple[list[Entry], int]:
        """What was recorded from position ``since`` on, and the position after it."""
        items = self.entries[since : self.shown]
        return items, since + len(items)

    def history(self) -> History:
        """The history so far."""
        return History(self.entries[: self.shown])
