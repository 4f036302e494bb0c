"""The work queue keeps client-go's promises: one copy per item, no parallel processing of
an item, earliest delay wins, exponential per-item backoff reset by forget.
"""

from __future__ import annotations

import threading

import pytest

from mochaos.ctrl.workqueue import RateLimiter, WorkQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(clock: FakeClock | None = None) -> WorkQueue:
    clock = clock or FakeClock()
    return WorkQueue(limiter=RateLimiter(base=0.005, cap=1000, clock=clock), clock=clock)


def drain(q: WorkQueue) -> list:
    out = []
    while (item := q.get(timeout=0)) is not None:
        out.append(item)
        q.done(item)
    return out


def test_an_item_is_queued_once() -> None:
    q = make()
    for item in ("a", "b", "a", "a"):
        q.add(item)
    assert drain(q) == ["a", "b"]


def test_adding_while_processing_requeues_after_done() -> None:
    q = make()
    q.add("a")
    assert q.get(timeout=0) == "a"
    q.add("a")
    assert q.get(timeout=0) is None  # not handed to a second worker
    q.done("a")
    assert q.get(timeout=0) == "a"


def test_add_after_waits_and_the_earliest_delay_wins() -> None:
    clock = FakeClock()
    q = make(clock)
    q.add_after("a", 10)
    q.add_after("a", 3)
    q.add_after("a", 20)
    clock.now += 2.9
    assert q.get(timeout=0) is None
    clock.now += 0.2
    assert q.get(timeout=0) == "a"
    q.done("a")
    clock.now += 30
    assert q.get(timeout=0) is None  # the later delays were merged away


def test_rate_limited_backoff_doubles_and_forget_resets() -> None:
    limiter = RateLimiter(base=0.005, cap=0.02, qps=1e9, burst=10**9)
    assert [limiter.when("a") for _ in range(4)] == pytest.approx([0.005, 0.01, 0.02, 0.02])
    assert limiter.num_requeues("a") == 4
    assert limiter.when("b") == pytest.approx(0.005)
    limiter.forget("a")
    assert limiter.when("a") == pytest.approx(0.005)


def test_token_bucket_limits_overall_rate() -> None:
    clock = FakeClock()
    limiter = RateLimiter(base=0.0, cap=0.0, qps=2, burst=2, clock=clock)
    assert limiter.when("a") == 0 and limiter.when("b") == 0
    assert limiter.when("c") == pytest.approx(0.5)


def test_get_blocks_until_an_item_arrives_and_shutdown_releases() -> None:
    q = make()
    got = []
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    q.add("x")
    t.join(2)
    assert got == ["x"]
    t = threading.Thread(target=lambda: got.append(q.get()))
    t.start()
    q.shutdown()
    t.join(2)
    assert got == ["x", None]
