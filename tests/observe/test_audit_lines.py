"""The audit log is read while the apiserver appends to it: a half-written last line is left
for the next read, never parsed (CI once failed on ``Unterminated string`` mid-scenario)."""

from __future__ import annotations

import json
from pathlib import Path

from mochaos.observe.audit import complete_events


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
