"""Wait until a condition holds: the one polling policy and the one give-up message.

Every wait that polls until a condition holds and fails when it does not goes through
:func:`wait_for` (tenacity underneath), so a wait that gives up always reads ``<what> not
ready after <N>s: <last state>``; docs/architecture.md §3 lists the loops that are not such
waits, and why.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from tenacity import (
    RetryError,
    Retrying,
    retry_if_result,
    stop_after_delay,
    stop_when_event_set,
    wait_fixed,
)

from mochaos.errors import InfraError

Check = Callable[[], tuple[bool, str]]


def not_ready(what: str, waited: float, last: str, *, hint: str = "") -> InfraError:
    """The error of a wait that gave up: ``<what> not ready after <N>s: <last state>``."""
    return InfraError(f"{what} not ready after {waited:.0f}s: {last}", hint=hint)


def wait_for(
    check: Check,
    *,
    what: str,
    timeout: float,
    interval: float = 2.0,
    hint: str = "",
    cancel: threading.Event | None = None,
    stop_if: Callable[[], str | None] | None = None,
) -> str:
    """Poll ``check`` (-> (done, description)) until done; InfraError with the last description.

    The policy: a fixed ``interval`` between polls, give up after ``timeout`` or once
    ``cancel`` is set (the work is no longer wanted).
    An exception from ``check`` counts as "not yet" and its text becomes the
    description, so a flaky API does not end the wait early. ``stop_if``, asked before
    each poll, says why waiting longer is pointless (what is waited for has exited): its
    reason ends the wait at once as an InfraError. Returns the description of the poll
    that succeeded.
    """
    last = ["nothing observed yet"]
    started = time.monotonic()
    pointless: list[str] = []

    def attempt() -> bool:
        reason = stop_if() if stop_if is not None else None
        if reason is not None:
            pointless.append(reason)
            return True
        try:
            done, last[0] = check()
        except Exception as err:
            done, last[0] = False, f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
        return done

    stop = stop_after_delay(timeout)
    if cancel is not None:
        stop = stop | stop_when_event_set(cancel)
    policy = Retrying(
        stop=stop,
        wait=wait_fixed(interval),
        retry=retry_if_result(lambda done: not done),
    )
    try:
        policy(attempt)
    except RetryError as err:
        if cancel is not None and cancel.is_set():
            raise InfraError(f"{what}: the wait was cancelled", hint=hint) from err
        raise not_ready(what, time.monotonic() - started, last[0], hint=hint) from err
    if pointless:
        raise InfraError(pointless[0], hint=hint)
    return last[0]
