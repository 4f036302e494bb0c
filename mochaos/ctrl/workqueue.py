"""A delaying, rate-limited work queue with client-go's semantics (see :class:`WorkQueue`)."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable

Clock = Callable[[], float]


class RateLimiter:
    """client-go's default controller limiter: max(per-item exponential, token bucket)."""

    def __init__(
        self,
        *,
        base: float,
        cap: float,
        qps: float = 10.0,
        burst: int = 100,
        clock: Clock = time.monotonic,
    ) -> None:
        self._base = base
        self._cap = cap
        self._qps = qps
        self._burst = float(burst)
        self._clock = clock
        self._failures: dict[Hashable, int] = {}
        self._tokens = float(burst)
        self._last = clock()

    def when(self, item: Hashable) -> float:
        """The delay before the next retry of ``item`` (counts one more failure)."""
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        exponential = min(self._base * (2**failures), self._cap)
        return max(exponential, self._bucket_delay())

    def forget(self, item: Hashable) -> None:
        """Reset the failure count of ``item``."""
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        """How many rate-limited retries ``item`` has had since it was last forgotten."""
        return self._failures.get(item, 0)

    def _bucket_delay(self) -> float:
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
        self._last = now
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps


class WorkQueue:
    """The queue of reconcile requests of one controller.

    - An item is queued at most once; adding it while it is being processed marks it
      dirty and it is queued again at :meth:`done` — so one item is never processed by two
      workers at once.
    - :meth:`add_after` keeps the earliest of several pending delays; :meth:`forget` does
      not cancel a pending delay.
    - :meth:`add_rate_limited` delays by the larger of a per-item exponential backoff
      (base doubling up to a cap, reset by :meth:`forget`) and an overall token bucket.
    """

    def __init__(self, *, limiter: RateLimiter, clock: Clock = time.monotonic) -> None:
        self._limiter = limiter
        self._clock = clock
        self._cond = threading.Condition()
        self._queue: deque[Hashable] = deque()
        self._dirty: set[Hashable] = set()
        self._processing: set[Hashable] = set()
        self._waiting: dict[Hashable, float] = {}
        self._heap: list[tuple[float, int, Hashable]] = []
        self._seq = itertools.count()
        self._shutting_down = False

    def add(self, item: Hashable) -> None:
        """Queue ``item`` now (no-op when already queued)."""
        with self._cond:
            self._add_locked(item)

    def add_after(self, item: Hashable, delay: float) -> None:
        """Queue ``item`` after ``delay`` seconds (the earliest pending delay wins)."""
        if delay <= 0:
            self.add(item)
            return
        with self._cond:
            if self._shutting_down:
                return
            ready = self._clock() + delay
            current = self._waiting.get(item)
            if current is not None and current <= ready:
                return
            self._waiting[item] = ready
            heapq.heappush(self._heap, (ready, next(self._seq), item))
            self._cond.notify()

    def add_rate_limited(self, item: Hashable) -> None:
        """Queue ``item`` after its rate-limited backoff delay."""
        with self._cond:
            delay = self._limiter.when(item)
        self.add_after(item, delay)

    def forget(self, item: Hashable) -> None:
        """Reset the backoff of ``item``."""
        with self._cond:
            self._limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        """Rate-limited retries of ``item`` since it was last forgotten."""
        with self._cond:
            return self._limiter.num_requeues(item)

    def get(self, timeout: float | None = None) -> Hashable | None:
        """The next item to process (marked processing); None on shutdown or timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                self._promote_due()
                if self._queue:
                    item = self._queue.popleft()
                    self._processing.add(item)
                    self._dirty.discard(item)
                    return item
                if self._shutting_down:
                    return None
                wait = self._heap[0][0] - self._clock() if self._heap else None
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return None
                    wait = remaining if wait is None else min(wait, remaining)
                self._cond.wait(wait)

    def done(self, item: Hashable) -> None:
        """Mark ``item`` processed; queue it again if it was added meanwhile."""
        with self._cond:
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._cond.notify()

    def shutdown(self) -> None:
        """Stop handing out items; blocked :meth:`get` calls return None."""
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def _add_locked(self, item: Hashable) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        self._cond.notify()

    def _promote_due(self) -> None:
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            ready, _, item = heapq.heappop(self._heap)
            if self._waiting.get(item) == ready:
                del self._waiting[item]
                self._add_locked(item)
