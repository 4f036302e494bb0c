"""The event correlator: identical events counted, similar ones combined, spam dropped."""

from __future__ import annotations

from mochaos.model.event_recorder import AGGREGATE_MAX, SPAM_BURST, Correlator


def event(message: str = "object is synced", *, name: str = "x", reason: str = "ReconcileSuccess"):
    return {
        "metadata": {"name": f"{name}.{id(message):x}", "namespace": "ns"},
        "involvedObject": {"kind": "CNClaim", "namespace": "ns", "name": name, "uid": "u1"},
        "source": {"component": "cn-claim-manager"},
        "type": "Normal",
        "reason": reason,
        "message": message,
        "firstTimestamp": "t0",
        "lastTimestamp": "t0",
        "count": 1,
    }


def test_repeat_of_an_identical_event_updates_the_first() -> None:
    c = Correlator()
    first, is_update = c.correlate(event(), 0.0)
    assert not is_update
    again, is_update = c.correlate(event(), 1.0)
    assert is_update
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert again["count"] == 2


def test_events_beyond_the_burst_are_dropped_then_refill() -> None:
    c = Correlator()
    results = [c.correlate(event(), 0.0) for _ in range(SPAM_BURST + 3)]
    assert all(r is not None for r in results[:SPAM_BURST])
    assert results[SPAM_BURST:] == [None, None, None]
    assert c.correlate(event(), 301.0) is not None
    assert c.correlate(event(name="other"), 0.0) is not None


def test_many_similar_messages_are_combined() -> None:
    c = Correlator()
    out = [c.correlate(event(f"failed {i}", reason="ReconcileFail"), float(i)) for i in range(12)]
    messages = [e["message"] for e, _ in out]
    assert not any(m.startswith("(combined") for m in messages[: AGGREGATE_MAX - 1])
    assert messages[AGGREGATE_MAX - 1] == "(combined from similar events): failed 9"
