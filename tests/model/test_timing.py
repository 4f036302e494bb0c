"""Every operator interval scales with --time-scale; timestamps and durations format like Go."""

from __future__ import annotations

import pytest

from mochaos.model.timing import Timing, go_duration, parse_time

# The operator's values in seconds (docs/operator-behaviour.md §1.2, §3, §7).
OPERATOR = {
    "default_requeue": 2,
    "backoff_base": 0.005,
    "backoff_cap": 1000,
    "wait_cache_timeout": 10,
    "retry_bind": 5,
    "retry_patch": 15,
    "propagation_delay": 15,
    "migration_resync": 10,
    "claimset_cache_wait": 1,
    "pool_max_pods_wait": 60,
    "store_retry": 5,
    "store_resync": 30,
    "store_drain_min_delay": 15,
    "store_drain_timeout": 300,
    "store_drain_long": 300,
}


@pytest.mark.parametrize("name", sorted(OPERATOR))
def test_defaults_are_the_operators(name: str) -> None:
    assert getattr(Timing(), name) == pytest.approx(OPERATOR[name])


@pytest.mark.parametrize("name", sorted(OPERATOR))
def test_every_interval_scales(name: str) -> None:
    assert getattr(Timing(scale=0.1), name) == pytest.approx(OPERATOR[name] * 0.1)


def test_drain_settings_are_operator_seconds_and_scale() -> None:
    timing = Timing(scale=0.5, min_delay=4, drain_timeout=40)
    assert timing.store_drain_min_delay == pytest.approx(2)
    assert timing.store_drain_timeout == pytest.approx(20)


def test_scale_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        Timing(scale=0)


def test_stamp_precision_follows_the_scale() -> None:
    t = 1_780_000_000.25
    assert Timing().stamp(t) == "2026-05-28T20:26:40Z"
    assert Timing(scale=0.5).stamp(t) == "2026-05-28T20:26:40.250000Z"
    assert parse_time(Timing(scale=0.5).stamp(t)) == pytest.approx(t)
    assert parse_time(Timing().stamp(t)) == pytest.approx(1_780_000_000)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (15, "15s"),
        (2, "2s"),
        (60, "1m0s"),
        (300, "5m0s"),
        (3600, "1h0m0s"),
        (1.5, "1.5s"),
        (0.2, "200ms"),
        (0.0005, "500µs"),
        (0, "0s"),
    ],
)
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text
