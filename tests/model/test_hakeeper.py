"""The score annotation (the model's query service) and the store UUID."""

from __future__ import annotations

import re
import threading
import time

import pytest

from mochaos.model.hakeeper import (
    HAKeeper,
    MissingScore,
    Score,
    StoreCache,
    read_score,
    store_uuid,
)


def pod(score: str | None = None, running: bool = True) -> dict:
    annotations = {} if score is None else {"matrixorigin.io/score": score}
    state = {"running": {"startedAt": "2026-01-01T00:00:00Z"}} if running else {"waiting": {}}
    return {
        "metadata": {"name": "p-1", "namespace": "ns", "annotations": annotations},
        "spec": {},
        "status": {"containerStatuses": [{"name": "main", "state": state}]},
    }


def test_score_formats() -> None:
    assert read_score(pod('{"sessionCount":2,"pipelineCount":1}')) == Score(2, 1, 0)
    assert read_score(pod("3")) == Score(sessions=3)
    assert read_score(pod("")) == Score()


def test_missing_score_is_the_operators_error() -> None:
    with pytest.raises(MissingScore, match="connection annotation is empty"):
        read_score(pod())


def test_score_round_trip() -> None:
    score = Score(sessions=1, started="2026-01-01T00:00:00Z")
    assert read_score(pod(score.to_annotation())) == score
    assert not score.safe_to_reclaim()
    assert Score().safe_to_reclaim()


def test_store_registered_when_the_cache_lists_it() -> None:
    stop = threading.Event()
    cache = StoreCache(stores=lambda: [store_uuid(pod())], refresh=60, stop=stop)
    try:
        assert HAKeeper(cache).registered(pod())
        other = pod()
        other["metadata"]["name"] = "p-2"
        assert not HAKeeper(cache).registered(other)
    finally:
        stop.set()


def test_store_cache_is_filled_on_first_use_then_only_on_refresh() -> None:
    """mocli/cn_cache.go: a store registered after a fill is unseen until the next one."""
    registered: list[str] = []
    calls: list[float] = []

    def stores() -> list[str]:
        calls.append(time.monotonic())
        return list(registered)

    stop = threading.Event()
    cache = StoreCache(stores=stores, refresh=0.3, stop=stop)
    try:
        assert calls == []  # nothing is read before the first lookup
        registered.append("a")
        assert cache.has("a")  # the first lookup fills the cache at once
        registered.append("b")
        assert not cache.has("b")  # registered after the fill: not seen yet
        deadline = time.monotonic() + 5
        while not cache.has("b"):
            assert time.monotonic() < deadline, "the refill never came"
            time.sleep(0.02)
        assert calls[1] - calls[0] >= 0.3
    finally:
        stop.set()


def test_store_uuid_shape_and_inputs() -> None:
    uuid = store_uuid(pod())
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", uuid)
    other = pod()
    other["spec"]["subdomain"] = "cn-headless"
    assert store_uuid(other) != uuid
