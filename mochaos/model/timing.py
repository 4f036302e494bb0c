"""Every interval of the operator, in one place, multiplied by ``--time-scale``.

The defaults are the operator's own (docs/operator-behaviour.md §1.2, §3, §7), each with its
source line; bench/honesty/model_pace.py measures the phases they make next to the real manager's
(docs/model-pacing.md). A scale F < 1 shrinks all of them alike so a test runs fast while
keeping the same ordering of events; timestamps the model writes then carry sub-second
precision so short intervals stay exact.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from mochaos.ctrl.finalizers import STORE_DRAIN_TIMEOUT
from mochaos.ctrl.mo_components import DISCOVERY_TIMEOUT


@dataclass(frozen=True, slots=True)
class Timing:
    """The operator's intervals in operator seconds, and the scale that maps them to wall time.

    ``min_delay`` and ``drain_timeout`` are the CNSet's scaling config (``--min-delay``,
    ``--drain-timeout``), also in operator seconds and scaled like the rest.
    """

    scale: float = 1.0
    min_delay: float = 15.0
    drain_timeout: float = STORE_DRAIN_TIMEOUT

    def __post_init__(self) -> None:
        if self.scale <= 0:
            raise ValueError(f"time scale must be positive, got {self.scale}")

    def wall(self, seconds: float) -> float:
        """Operator seconds → wall seconds."""
        return seconds * self.scale

    # rt/reconciler.go:60 — after an action, a conflict or an unfinished finalize
    @property
    def default_requeue(self) -> float:
        """The runtime's ``retry`` delay (2 s)."""
        return self.wall(2)

    # client-go's per-item exponential limiter (controller-runtime v0.15 defaults)
    @property
    def backoff_base(self) -> float:
        """First backoff delay (5 ms)."""
        return self.wall(0.005)

    @property
    def backoff_cap(self) -> float:
        """Largest backoff delay (1000 s)."""
        return self.wall(1000)

    # cnclaim/controller.go:46-50, migrate.go:31-33
    @property
    def wait_cache_timeout(self) -> float:
        """Grace after status.boundTime before a missing pod means Lost (10 s)."""
        return self.wall(10)

    @property
    def retry_bind(self) -> float:
        """Bind requeue (5 s)."""
        return self.wall(5)

    @property
    def retry_patch(self) -> float:
        """Requeue when the bound pod cannot be kept working (15 s)."""
        return self.wall(15)

    @property
    def propagation_delay(self) -> float:
        """Migration: wait after status.store.boundTime before draining the source (15 s)."""
        return self.wall(15)

    @property
    def migration_resync(self) -> float:
        """Migration polling while the source drains (10 s)."""
        return self.wall(10)

    # cnclaimset/controller.go:98
    @property
    def claimset_cache_wait(self) -> float:
        """``wait cache sync`` requeue (1 s)."""
        return self.wall(1)

    # cnpool/controller.go:128
    @property
    def pool_max_pods_wait(self) -> float:
        """Requeue when the pool reached maxPods (1 min)."""
        return self.wall(60)

    # cnstore/controller.go:62-68
    @property
    def store_retry(self) -> float:
        """cnstore drain polling (5 s)."""
        return self.wall(5)

    @property
    def store_resync(self) -> float:
        """cnstore stats refresh of Normal pods (30 s)."""
        return self.wall(30)

    # mocli/manager.go:36 RefreshInterval; cn_cache.go:72-80
    @property
    def store_cache_refresh(self) -> float:
        """How often the operator refills its copy of HAKeeper's CN stores (15 s)."""
        return self.wall(15)

    # matrixone pkg/logservice/shardinfo.go:49, the HAKeeper client's discovery
    @property
    def hakeeper_discovery(self) -> float:
        """How long a call to a hanging HAKeeper waits before it fails (1 s): the client's
        connection is gone, and each call waits that long for HAKeeper's discovery."""
        return self.wall(DISCOVERY_TIMEOUT)

    @property
    def store_drain_min_delay(self) -> float:
        """MinDelaySeconds of the CNSet (15 s)."""
        return self.wall(self.min_delay)

    @property
    def store_drain_timeout(self) -> float:
        """StoreDrainTimeout of the CNSet (5 min)."""
        return self.wall(self.drain_timeout)

    @property
    def store_drain_long(self) -> float:
        """storeDrainTakesLongDuration (5 min)."""
        return self.wall(300)

    def stamp(self, t: float | None = None) -> str:
        """An RFC3339 UTC timestamp: whole seconds at scale ≥ 1 (as metav1.Time), else µs."""
        dt = datetime.fromtimestamp(time.time() if t is None else t, tz=UTC)
        if self.scale >= 1:
            return dt.strftime("%Y-%m-%dT%H:%M:%SZ")
        return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str) -> float:
    """Parse an RFC3339 timestamp (with or without a fraction) to epoch seconds."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def since(value: str) -> float:
    """Wall seconds elapsed since an RFC3339 timestamp."""
    return time.time() - parse_time(value)


def go_duration(seconds: float) -> str:
    """Format a duration as Go's ``time.Duration.String`` does (``15s``, ``1m0s``, ``200ms``)."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _trim(ns / size) + unit
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    out = sign
    if hours:
        out += f"{hours}h"
    if hours or minutes:
        out += f"{minutes}m"
    return out + _trim(rest / 1e9) + "s"


def _trim(value: float) -> str:
    text = f"{value:.9f}".rstrip("0").rstrip(".")
    return text or "0"
