"""The audit log is read while the apiserver appends to it: a half-written last line is left
for the next read, never parsed (CI once failed on ``Unterminated string`` mid-scenario)."""

from __future__ import annotations

import json
from pathlib import Path

from mochaos.observe.audit import AuditSlice, complete_events


def event(verb: str) -> bytes:
    return json.dumps({"kind": "Event", "verb": verb, "stage": "ResponseComplete"}).encode()


def test_a_half_written_last_line_is_left_for_the_next_read(tmp_path: Path):
    log = tmp_path / "audit.log"
    whole = event("create") + b"\n"
    log.write_bytes(whole + event("patch")[:30])
    assert [e["verb"] for e in complete_events(log)] == ["create"]
    log.write_bytes(whole + event("patch") + b"\n")
    assert [e["verb"] for e in complete_events(log)] == ["create", "patch"]


def test_reading_starts_at_the_offset(tmp_path: Path):
    log = tmp_path / "audit.log"
    first = event("create") + b"\n"
    log.write_bytes(first + event("delete") + b"\n")
    assert [e["verb"] for e in complete_events(log, len(first))] == ["delete"]


def compact(verb: str, namespace: str) -> bytes:
    """A line as the apiserver writes it: compact JSON."""
    body = {"verb": verb, "objectRef": {"resource": "pods", "namespace": namespace}}
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def test_only_lines_containing_the_bytes_are_parsed(tmp_path: Path):
    """The prefilter spares parsing: a line without the bytes is skipped unread (here it
    is not even JSON)."""
    log = tmp_path / "audit.log"
    log.write_bytes(b"not json\n" + compact("watch", "a") + compact("get", "a"))
    got = complete_events(log, containing=b'"verb":"watch"')
    assert [e["verb"] for e in got] == ["watch"]


def test_an_offset_past_the_end_reads_the_replaced_file_from_its_start(tmp_path: Path):
    log = tmp_path / "audit.log"
    log.write_bytes(compact("create", "a"))
    assert [e["verb"] for e in complete_events(log, 10_000)] == ["create"]


def test_a_slice_reads_one_namespace_and_leaves_the_half_written_line(tmp_path: Path):
    log = tmp_path / "audit.log"
    log.write_bytes(compact("get", "a"))
    audit = AuditSlice(log)
    with log.open("ab") as fh:
        fh.write(compact("create", "a") + compact("create", "b") + compact("patch", "a")[:20])
    assert [e["verb"] for e in audit.events("a")] == ["create"]
