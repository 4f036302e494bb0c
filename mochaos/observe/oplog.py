"""The operator's structured log: parse its JSON lines and count retries per object.

The real operator logs with zap's JSON encoder (``ts`` as RFC3339 or epoch
seconds, ``level``, ``msg``, ``namespace``, ``name`` and the step's keys); the
model writes the same shape. What a line means is ``mochaos.observe.vocabulary``'s;
counting reads the recorded history with it, so the invariants, the JUnit
properties and the timeline count alike.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mochaos.observe.history import History
from mochaos.observe.vocabulary import finalize_retries

_BASE_KEYS = {"ts", "level", "msg", "namespace", "name", "caller", "logger", "stacktrace"}


@dataclass(frozen=True)
class ParsedLine:
    """One decoded operator log line."""

    ts: float | None
    level: str
    msg: str
    namespace: str
    name: str
    fields: dict[str, Any]


def _parse_ts(raw: Any) -> float | None:
    if isinstance(raw, int | float):
        return float(raw)
    if isinstance(raw, str):
        try:
            return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def parse_log_line(line: str) -> ParsedLine | None:
    """Decode one line; None for anything that is not a JSON log object."""
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or "msg" not in data:
        return None
    return ParsedLine(
        ts=_parse_ts(data.get("ts")),
        level=str(data.get("level", "info")),
        msg=str(data["msg"]),
        namespace=str(data.get("namespace", "")),
        name=str(data.get("name", "")),
        fields={k: v for k, v in data.items() if k not in _BASE_KEYS},
    )


@dataclass
class RetryCounts:
    """Per-claim counts read from the operator log and our own action records."""

    finalize: Counter[str] = field(default_factory=Counter)
    migration_requests: Counter[str] = field(default_factory=Counter)

    @property
    def agent_migration_retries(self) -> int:
        """Patches the agent sent after the first one, summed over claims."""
        return sum(max(n - 1, 0) for n in self.migration_requests.values())


def count_retries(history: History) -> RetryCounts:
    """Finalize retries per claim (vocabulary.finalize_retries) and the agent's patches."""
    counts = RetryCounts(finalize=finalize_retries(history.logs()))
    for act in history.actions("request_migration"):
        if act.error is None:
            counts.migration_requests[act.name] += 1
    return counts
