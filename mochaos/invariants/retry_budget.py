"""retry-budget (hot loops): per object, retries within a sliding window stay within budget.

Counts, per claim, the operator's ``finalize CNClaim`` log records (one per
Finalize pass), and, per object, its error-level records. More than
``retry_budget`` of either within any ``retry_window`` seconds is a hot loop;
the violation is the record that exceeded the budget. Errors that only say
the apiserver could not be reached are the infrastructure's, not a hot loop of
the operator's, and are not counted.
"""

from __future__ import annotations

import re
from collections import deque

from mochaos.invariants.base import InvariantBase
from mochaos.invariants.facts import CLAIM, ref
from mochaos.types import CheckOptions, History, LogRecord, Verdict

FINALIZE_MSG = "finalize CNClaim"
ERROR_LEVELS = frozenset({"error", "dpanic", "panic", "fatal"})
UNREACHABLE = re.compile(
    r"connection refused|connection reset|dial tcp|i/o timeout|no route to host|"
    r"Max retries exceeded|RemoteDisconnected|server is currently unable|EOF",
    re.IGNORECASE,
)
"""Error texts of an apiserver that is down or restarting."""


class RetryBudget(InvariantBase):
    """Finalize passes per claim and error records per object stay within the budget."""

    id = "retry-budget"
    bugs = ()

    def check(self, history: History, options: CheckOptions, *, final: bool = True) -> Verdict:
        """Fail at the first record that exceeds the budget in its window."""
        windows: dict[tuple[str, str, str], deque[float]] = {}
        finalizes = errors = 0
        for record in history:
            if not isinstance(record, LogRecord) or not record.name:
                continue
            kinds = []
            if record.msg == FINALIZE_MSG:
                kinds.append("finalize")
                finalizes += 1
            if record.level.lower() in ERROR_LEVELS and not _unreachable(record):
                kinds.append("error")
                errors += 1
            for kind in kinds:
                times = windows.setdefault((kind, record.namespace, record.name), deque())
                times.append(record.t)
                while record.t - times[0] > options.retry_window:
                    times.popleft()
                if len(times) > options.retry_budget:
                    return self._fail(kind, record, len(times), options)
        return self.passed(
            f"{finalizes} '{FINALIZE_MSG}' and {errors} error record(s), within budget"
        )

    def _fail(self, kind: str, record: LogRecord, count: int, options: CheckOptions) -> Verdict:
        if kind == "finalize":
            obj = ref(CLAIM, record.name)
            what = f"{count} '{FINALIZE_MSG}' records for CNClaim {record.name}"
        else:
            obj = record.name
            what = f"{count} error-level records for {record.namespace}/{record.name}"
        text = str(record.fields.get("error") or record.msg)
        last = next(iter(text.splitlines()), "")[:120]
        return self.failed(
            t=record.t,
            seq=record.seq,
            objects=(obj,),
            message=(
                f"{what} within {options.retry_window:g}s (budget {options.retry_budget}); "
                f"last: {last}"
            ),
        )


def _unreachable(record: LogRecord) -> bool:
    return bool(UNREACHABLE.search(f"{record.msg} {record.fields.get('error', '')}"))


INVARIANT = RetryBudget()
