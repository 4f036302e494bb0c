"""The operator's log vocabulary: its exact messages, what each line means, the finalize count.

The one home of the strings the operator writes (the reference model keeps its own
copies; a test holds them equal). Lines come from zap's JSON encoder in
controller-runtime's shape, from the real operator or the model alike; an Error-level
line carries a stack trace as its ``msg`` and the error in ``error``, so errors are
recognised by level, never by text. Line references: matrixone-operator at 2301e3b.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from enum import StrEnum
from typing import Any, Protocol

# pkg/controllers/cnclaim/controller.go
START_BIND = "start bind cn claim"  # :72
ORPHANS = "multiple orphan CN bound to 1 claim"  # :143
SKIP_CLAIMED_POD = "skip pod claimed by other CNClaim"  # :171
BIND_SUCCESS = "CN bind success"  # :181
KEEP_BOUND_ERROR = "error keep bound CN working"  # :280, an Info line with an ``error`` key
FINALIZE_ATTEMPT = "finalize CNClaim"  # :341, the first line of every Finalize pass
FINALIZE_SKIP_RECLAIM = "skip reclaim, pod still claimed by other CNClaim"  # :362
FINALIZE_RECLAIM = "finalize CNClaim, reclaim bound CN"  # :365
FINALIZE_RELEASE_LABEL = "release pod label, pod claimed by other CNClaim"  # PR #592 (caee443) :370
# pkg/controllers/cnclaim/migrate.go
MIGRATE = "migrate claimed pod"  # :41
DRAIN_SOURCE = "start draining source pod"  # :62
# pkg/controllers/cnclaimset/controller.go
SCALE_IN_SORT = "sort claims to scale-in"  # :234
SCALE_IN_SKIP_MIGRATING = "skip migrating claims from scale-in"  # PR #592 (caee443) :235
# pkg/controllers/cnstore/pooling.go
DRAIN_TIMEOUT = "drain pool pod timeout, delete it to avoid workload intervention"  # :55
# controller-runtime fork 5f706d7, pkg/reconciler/reconciler.go
SYNCED = "object is synced, reconcile will be triggered on next change or resync"  # :242
FINALIZE_UNFINISHED = "does not complete finalizing, retry"  # :367
FINALIZE_DONE = "resource finalizing complete, remove finalizer"  # :370
# sigs.k8s.io/controller-runtime internal/controller/controller.go, an Error line
RECONCILER_ERROR = "Reconciler error"

ERROR_LEVELS = frozenset({"error", "dpanic", "panic", "fatal"})
"""zap's levels at and above Error."""

UNREACHABLE = re.compile(
    r"connection refused|connection reset|dial tcp|i/o timeout|no route to host|"
    r"Max retries exceeded|RemoteDisconnected|server is currently unable|EOF",
    re.IGNORECASE,
)
"""Error texts of an apiserver that is down or restarting: the infrastructure's, not a loop."""

CONFLICT = re.compile(
    r"Operation cannot be fulfilled on|the object has been modified; please apply your changes"
)
"""The apiserver's 409 Conflict text (apimachinery ``errors.NewConflict``): an optimistic-
concurrency conflict, retried by the controller; whether it resolves is judged per object
written (conflicts-resolve), not as an error record."""


class LogKind(StrEnum):
    """What one operator log line means."""

    BIND = "bind"
    BIND_SUCCESS = "bind-success"
    BIND_SKIP = "bind-skip"
    ORPHANS = "orphans"
    KEEP_BOUND_ERROR = "keep-bound-error"
    MIGRATE = "migrate"
    DRAIN_SOURCE = "drain-source"
    FINALIZE_ATTEMPT = "finalize-attempt"
    FINALIZE_SKIP = "finalize-skip"
    FINALIZE_RECLAIM = "finalize-reclaim"
    FINALIZE_RELEASE = "finalize-release"
    FINALIZE_UNFINISHED = "finalize-unfinished"
    FINALIZE_DONE = "finalize-done"
    SCALE_IN_SORT = "scale-in-sort"
    SCALE_IN_SKIP = "scale-in-skip-migrating"
    DRAIN_TIMEOUT = "drain-timeout"
    SYNCED = "synced"
    ERROR = "error"
    CONFLICT = "conflict"
    UNREACHABLE = "unreachable"
    OTHER = "other"


MESSAGES: dict[str, LogKind] = {
    START_BIND: LogKind.BIND,
    BIND_SUCCESS: LogKind.BIND_SUCCESS,
    SKIP_CLAIMED_POD: LogKind.BIND_SKIP,
    ORPHANS: LogKind.ORPHANS,
    KEEP_BOUND_ERROR: LogKind.KEEP_BOUND_ERROR,
    MIGRATE: LogKind.MIGRATE,
    DRAIN_SOURCE: LogKind.DRAIN_SOURCE,
    FINALIZE_ATTEMPT: LogKind.FINALIZE_ATTEMPT,
    FINALIZE_SKIP_RECLAIM: LogKind.FINALIZE_SKIP,
    FINALIZE_RECLAIM: LogKind.FINALIZE_RECLAIM,
    FINALIZE_RELEASE_LABEL: LogKind.FINALIZE_RELEASE,
    FINALIZE_UNFINISHED: LogKind.FINALIZE_UNFINISHED,
    FINALIZE_DONE: LogKind.FINALIZE_DONE,
    SCALE_IN_SORT: LogKind.SCALE_IN_SORT,
    SCALE_IN_SKIP_MIGRATING: LogKind.SCALE_IN_SKIP,
    DRAIN_TIMEOUT: LogKind.DRAIN_TIMEOUT,
    SYNCED: LogKind.SYNCED,
}
"""Exact ``msg`` -> kind, for lines below Error level."""


class LogLine(Protocol):
    """A decoded log line: a recorded LogRecord or a freshly parsed line."""

    level: str
    msg: str
    name: str
    fields: dict[str, Any]


def is_error(line: LogLine) -> bool:
    """True for a line at zap's Error level or above (any case)."""
    return line.level.strip().lower() in ERROR_LEVELS


def error_text(line: LogLine) -> str:
    """The first line of the line's error: its ``error`` key, else its message."""
    text = str(line.fields.get("error") or line.msg)
    return next(iter(text.splitlines()), "")


def classify(line: LogLine) -> LogKind:
    """What the line means: errors by level (ERROR, or UNREACHABLE / CONFLICT by their text),
    others by exact message."""
    if is_error(line):
        text = f"{line.msg} {line.fields.get('error', '')}"
        if UNREACHABLE.search(text):
            return LogKind.UNREACHABLE
        return LogKind.CONFLICT if CONFLICT.search(text) else LogKind.ERROR
    return MESSAGES.get(line.msg, LogKind.OTHER)


def finalize_retries(lines: Iterable[LogLine]) -> Counter[str]:
    """Finalize retries per claim: its Finalize passes, the first one included.

    Every pass of the claim controller's Finalize logs FINALIZE_ATTEMPT first,
    whatever its outcome (unfinished, done, or an error), so each such line is
    one pass; lines of other kinds and other levels are not counted.
    """
    return Counter(
        line.name for line in lines if classify(line) is LogKind.FINALIZE_ATTEMPT and line.name
    )
