"""wait_for: the one polling policy and the one give-up message."""

from __future__ import annotations

import threading
import time

import pytest

from mochaos.errors import InfraError
from mochaos.tooling.waiting import wait_for


def test_wait_for_returns_once_the_check_passes() -> None:
    answers = iter([(False, "0/1"), (False, "0/1"), (True, "1/1")])
    assert wait_for(lambda: next(answers), what="x", timeout=30, interval=0.01) == "1/1"


def test_wait_for_gives_the_last_state_it_saw_when_it_gives_up() -> None:
    def never() -> tuple[bool, str]:
        return False, "2/3 nodes Ready"

    with pytest.raises(InfraError) as info:
        wait_for(never, what="kind cluster x", timeout=0.1, interval=0.02, hint="look at logs")
    text = str(info.value)
    assert text.startswith("kind cluster x not ready after ")
    assert text.endswith(": 2/3 nodes Ready: look at logs")


def test_wait_for_treats_an_api_error_as_not_yet() -> None:
    calls = iter([ConnectionError("refused\nmore"), (True, "up")])

    def check() -> tuple[bool, str]:
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    assert wait_for(check, what="x", timeout=30, interval=0.01) == "up"


def test_wait_for_gives_up_as_soon_as_it_is_cancelled() -> None:
    cancel = threading.Event()
    polls = []

    def never() -> tuple[bool, str]:
        polls.append(time.monotonic())
        if len(polls) == 3:
            cancel.set()
        return False, "0/1"

    t0 = time.monotonic()
    with pytest.raises(InfraError, match="x: the wait was cancelled"):
        wait_for(never, what="x", timeout=30, interval=0.01, cancel=cancel)
    assert len(polls) == 3 and time.monotonic() - t0 < 5


def test_wait_for_ends_at_once_when_waiting_is_pointless() -> None:
    """What is waited for exited after two polls: the third poll is not made and the
    reason, not a timeout, is the error (a 30 s timeout would fail the test's own
    bound of polls instead of passing slowly)."""
    polls: list[int] = []

    def never() -> tuple[bool, str]:
        polls.append(1)
        return False, "0/1"

    def exited() -> str | None:
        return "the host exited" if len(polls) >= 2 else None

    with pytest.raises(InfraError) as info:
        wait_for(never, what="x", timeout=30, interval=0.01, stop_if=exited, hint="see its log")
    assert str(info.value) == "the host exited: see its log"
    assert len(polls) == 2


def test_wait_for_without_a_reason_to_stop_waits_on() -> None:
    answers = iter([(False, "0/1"), (False, "0/1"), (True, "1/1")])
    got = wait_for(lambda: next(answers), what="x", timeout=30, interval=0.01, stop_if=lambda: None)
    assert got == "1/1"
