"""The interposer's journal as history: the operator's requests and the watch events it was
given, what the interposer did to each; nothing else is recorded."""

from __future__ import annotations

import json
from pathlib import Path

from mochaos.observe.history import ApiCall, Delivery, History
from mochaos.observe.interposed import JournalReader
from mochaos.observe.recorder import Recorder

from support.polling import wait_until

REQUEST = {
    "type": "request", "seq": 5, "t": 100.5, "verb": "update", "method": "PUT",
    "group": "core.matrixorigin.io", "resource": "cnclaims", "subresource": "status",
    "namespace": "ns", "name": "x", "status": 200, "latency_ms": 3.2, "action": "held",
    "rule": "hold-x", "held_ms": 2000.0,
    "object": {"kind": "CNClaim", "name": "x", "namespace": "ns", "resourceVersion": "777"},
}  # fmt: skip


def test_a_request_is_an_api_call_with_what_the_interposer_did():
    call = JournalReader("ns").entry_of(json.dumps(REQUEST), seq=3)
    assert call == ApiCall(3, 100.5, "update", "cnclaims", "ns", "x", "status", 200, 777, "held",
                           "hold-x", 3.2, 2000.0)  # fmt: skip


def test_an_event_is_a_delivery_and_a_passed_bookmark_is_nothing():
    event = {"type": "event", "seq": 9, "t": 101.0, "watch": 4, "resource": "pods",
             "namespace": "ns", "event": "MODIFIED", "name": "a", "rv": 780,
             "action": "coalesced", "rule": "miss"}  # fmt: skip
    assert JournalReader("ns").entry_of(json.dumps(event), seq=4) == Delivery(
        4, 101.0, "pods", "ns", "a", "MODIFIED", 780, "coalesced", "miss"
    )
    bookmark = event | {"event": "BOOKMARK", "action": "delivered", "name": ""}
    assert JournalReader("ns").entry_of(json.dumps(bookmark), seq=5) is None
    held = bookmark | {"action": "held"}
    assert JournalReader("ns").entry_of(json.dumps(held), seq=5) is not None


def test_other_namespaces_discovery_rules_and_garbage_are_nothing():
    other = REQUEST | {"namespace": "elsewhere"}
    discovery = {"type": "request", "seq": 1, "t": 1.0, "verb": "get", "resource": "",
                 "namespace": "", "path": "/apis"}  # fmt: skip
    rule = {"type": "rule", "seq": 2, "t": 1.0, "rule": "h", "what": "added"}
    for line in (json.dumps(other), json.dumps(discovery), json.dumps(rule), "{half"):
        assert JournalReader("ns").entry_of(line, seq=1) is None


def test_the_recorder_follows_the_journal_into_the_history(tmp_path: Path):
    journal = tmp_path / "interposer.jsonl"
    recorder = Recorder(None, namespace="ns", kinds=())  # type: ignore[arg-type]
    recorder.follow_interposer(journal)
    try:
        with journal.open("w") as fh:
            fh.write(json.dumps(REQUEST) + "\n")
            fh.write(json.dumps(REQUEST | {"name": "y", "action": "pass"}) + "\n")
        wait_until(lambda: len(recorder.history()) == 2, timeout=5, what="two calls")
    finally:
        recorder.stop()
    history: History = recorder.history()
    assert [(c.seq, c.name, c.action) for c in history.api_calls()] == [
        (0, "x", "held"), (1, "y", "pass"),
    ]  # fmt: skip


def test_a_rule_that_holds_back_the_view_is_a_period_the_operator_was_blind():
    reader = JournalReader("ns")
    added = {"type": "rule", "seq": 1, "t": 10.0, "rule": "stale-view-1", "what": "added",
             "detail": {"spec": {"action": "freeze", "match": {"resource": "pods"}}}}  # fmt: skip
    hold = added | {"rule": "hold-1", "detail": {"spec": {"action": "hold"}}}
    start = reader.entry_of(json.dumps(added), seq=0)
    assert reader.entry_of(json.dumps(hold), seq=1) is None
    expired = {"type": "rule", "seq": 9, "t": 12.5, "rule": "stale-view-1", "what": "expired"}
    end = reader.entry_of(json.dumps(expired), seq=2)
    assert (start.edge, start.subject, start.reason, start.t) == ("start", "stale-view-1", "pods",
                                                                 10.0)  # fmt: skip
    assert (end.edge, end.subject, end.t) == ("end", "stale-view-1", 12.5)
    assert reader.entry_of(json.dumps(expired), seq=3) is None  # ended once


def test_a_held_write_is_a_period_the_operator_was_held_from_its_first_match():
    reader = JournalReader("ns")
    added = {"type": "rule", "seq": 1, "t": 5.0, "rule": "hold-1", "what": "added",
             "detail": {"spec": {"action": "hold"}}}  # fmt: skip
    took = {"action": "hold", "verb": "patch", "resource": "pods", "name": "a"}
    matched = {"type": "rule", "seq": 2, "t": 7.0, "rule": "hold-1", "what": "matched",
               "detail": took}  # fmt: skip
    released = {"type": "rule", "seq": 3, "t": 9.5, "rule": "hold-1", "what": "released"}
    assert reader.entry_of(json.dumps(added), seq=0) is None
    start = reader.entry_of(json.dumps(matched), seq=1)
    assert reader.entry_of(json.dumps(matched), seq=2) is None  # one period per rule
    end = reader.entry_of(json.dumps(released), seq=3)
    assert (start.period, start.edge, start.reason, start.t) == ("operator-held", "start",
                                                                 "patch pods/a", 7.0)  # fmt: skip
    assert (end.period, end.edge, end.t) == ("operator-held", "end", 9.5)
