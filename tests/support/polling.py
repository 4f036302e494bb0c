"""The one poll the framework's own tests use: wait until a check returns something truthy.

tests/ is on ``sys.path`` through ``pythonpath = ["tests"]`` (pyproject), so that every test
module imports it the same way: ``from support.polling import wait_until``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

INTERVAL = 0.1
"""Seconds between two polls."""


def wait_until(check: Callable[[], T | None], what: str, *, timeout: float) -> T:
    """Poll ``check`` until it returns something truthy and return that; AssertionError
    naming ``what`` and the last value seen after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(INTERVAL)
    raise AssertionError(f"{what} did not happen within {timeout:.0f}s (last: {last!r})")
