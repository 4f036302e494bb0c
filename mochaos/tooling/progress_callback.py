"""The callable type long steps report progress through, and its default: a live line of
the ``mochaos`` logger (see :mod:`mochaos.progress`)."""

from __future__ import annotations

from collections.abc import Callable

from mochaos.progress import announce

Progress = Callable[[str], None]


def say(line: str) -> None:
    """One progress line of a long step (shown live, whatever the verbosity)."""
    announce(line)
