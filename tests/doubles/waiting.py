"""The wait the doubles' tests share."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wait_for(fn: Callable[[], T | None], *, what: str, timeout: float = 20.0) -> T:
    """Poll ``fn`` until it returns something truthy; fail naming the last value seen."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout}s (last: {last!r})")
