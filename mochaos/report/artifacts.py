"""What a test leaves behind: the history always; on failure, the evidence.

The history (``history.jsonl``) is streamed by the recorder while the test runs
(:mod:`mochaos.observe.stream`, its one writer); the files here are written at the end.

Evidence is the claims, claim sets and pods as YAML at the first violation and
at the end, the namespace's Events, and the slices of the operator log and the
apiserver audit log that concern the test's namespace.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from mochaos.invariants.verdict import Verdict, Violation
from mochaos.observe.history import History, State
from mochaos.report.html import render_html
from mochaos.report.timeline import build_rows, render_markdown

EVIDENCE_KINDS = ("CNClaimSet", "CNClaim", "Pod")
HISTORY_FILE = "history.jsonl"
"""The test's history, streamed by its recorder."""


def first_violation(verdicts: Sequence[Verdict]) -> tuple[str, Violation] | None:
    """The earliest recorded violation of any failed invariant, with its invariant id."""
    found = [
        (v.violation.seq, v.invariant, v.violation) for v in verdicts if v.failed and v.violation
    ]
    if not found:
        return None
    _, invariant, violation = min(found, key=lambda item: (item[0], item[1]))
    return invariant, violation


def state_at_seq(history: History, seq: int) -> State:
    """The objects right after the entry with sequence number ``seq``."""
    state = State()
    for entry, current in history.replay():
        state = current
        if entry.seq >= seq:
            break
    return state.copy()


def _strip(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without managedFields (noise for a reader)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def objects_yaml(state: State, *, namespace: str, header: str) -> str:
    """Claim sets, claims and pods of one namespace as a ``kind: List`` YAML document."""
    items = []
    for kind in EVIDENCE_KINDS:
        for name in sorted(state.all(kind)):
            obj = state.all(kind)[name]
            ns = (obj.get("metadata") or {}).get("namespace")
            if ns in (None, namespace):
                items.append(_strip(obj))
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    doc = {"apiVersion": "v1", "kind": "List", "items": items}
    return comment + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def namespace_events(history: History, namespace: str) -> list[dict[str, Any]]:
    """The last seen version of every Event of the namespace, in order of first sight."""
    latest: dict[str, dict[str, Any]] = {}
    for change in history.changes("Event"):
        if change.namespace == namespace:
            latest[change.name] = change.obj
    return [_strip(obj) for obj in latest.values()]


def _token(namespace: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.-]){re.escape(namespace)}(?![\w.-])")


def _operator_line_matches(line: str, namespace: str, token: re.Pattern[str]) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        record = None
    if isinstance(record, dict) and "namespace" in record:
        return record["namespace"] == namespace
    return bool(token.search(line))


def _audit_line_matches(line: str, namespace: str) -> bool:
    try:
        event = json.loads(line)
    except ValueError:
        return False
    if not isinstance(event, dict):
        return False
    if (event.get("objectRef") or {}).get("namespace") == namespace:
        return True
    uri = str(event.get("requestURI") or "").split("?", 1)[0]
    return f"/namespaces/{namespace}/" in uri or uri.endswith(f"/namespaces/{namespace}")


def _slice(src: Path, dst: Path, keep: Callable[[str], bool]) -> int:
    """Copy the lines of ``src`` that ``keep`` accepts; returns how many."""
    kept = 0
    with (
        src.open(encoding="utf-8", errors="replace") as fin,
        dst.open("w", encoding="utf-8") as fout,
    ):
        for line in fin:
            if line.strip() and keep(line):
                fout.write(line if line.endswith("\n") else line + "\n")
                kept += 1
    return kept


def write_artifacts(
    test_dir: Path,
    history: History,
    verdicts: Sequence[Verdict],
    *,
    operator_log: Path | None,
    audit_log: Path | None,
    namespace: str,
    failed: bool,
) -> dict[str, str]:
    """Write the test's artifacts into ``test_dir``; returns artifact name -> file path.

    The streamed ``history.jsonl`` is listed when it exists (it is never rewritten here).
    On failure also: ``objects-at-violation.yaml`` (when a violation was recorded),
    ``objects-at-end.yaml``, ``events.yaml``, ``operator.log`` and ``audit.jsonl`` (when
    those logs exist).
    """
    test_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, str] = {}

    def out(name: str, filename: str) -> Path:
        path = test_dir / filename
        written[name] = str(path)
        return path

    if (test_dir / HISTORY_FILE).is_file():
        out("history", HISTORY_FILE)
    if not failed:
        return written
    first = first_violation(verdicts)
    if first is not None:
        invariant, violation = first
        header = (
            f"claim sets, claims and pods of {namespace} right after seq {violation.seq} "
            f"(+{violation.t - history.start:.1f} s)\n"
            f"first violation: {invariant}: {violation.message}"
        )
        text = objects_yaml(
            state_at_seq(history, violation.seq), namespace=namespace, header=header
        )
        out("objects_at_violation", "objects-at-violation.yaml").write_text(text, encoding="utf-8")
    header = f"claim sets, claims and pods of {namespace} at the end of the history"
    text = objects_yaml(history.final_state(), namespace=namespace, header=header)
    out("objects_at_end", "objects-at-end.yaml").write_text(text, encoding="utf-8")
    events = {"apiVersion": "v1", "kind": "List", "items": namespace_events(history, namespace)}
    out("events", "events.yaml").write_text(
        yaml.safe_dump(events, sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    if operator_log is not None and operator_log.is_file():
        token = _token(namespace)
        _slice(
            operator_log,
            out("operator_log", "operator.log"),
            lambda line: _operator_line_matches(line, namespace, token),
        )
    if audit_log is not None and audit_log.is_file():
        _slice(
            audit_log,
            out("audit_log", "audit.jsonl"),
            lambda line: _audit_line_matches(line, namespace),
        )
    return written


def write_timeline(
    test_dir: Path,
    history: History,
    verdicts: Sequence[Verdict],
    *,
    title: str,
    meta: dict[str, str],
) -> dict[str, str]:
    """Write ``timeline.md`` and ``timeline.html``; returns artifact name -> file path."""
    test_dir.mkdir(parents=True, exist_ok=True)
    md = test_dir / "timeline.md"
    md.write_text(
        render_markdown(build_rows(history, verdicts), title=title, meta=meta), encoding="utf-8"
    )
    page = test_dir / "timeline.html"
    page.write_text(render_html(history, verdicts, title=title, meta=meta), encoding="utf-8")
    return {"timeline_md": str(md), "timeline_html": str(page)}
