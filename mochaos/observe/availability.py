"""Whether the apiserver answers: the periods it did not, as typed periods in the history.

While the apiserver is down or frozen nothing can happen — no watch event, no operator
write — so an operator cannot be held to a deadline during that time. A probe asks the
apiserver's ``/readyz`` every :data:`PERIOD` seconds; a probe unanswered within
:data:`TIMEOUT` starts an outage (at the moment that probe was sent), the next answered
one ends it (at the moment of its answer). The invariants judge on a clock that leaves
those periods out (:mod:`mochaos.invariants.judged`). ``/readyz`` is not audited.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from kubernetes import client
from kubernetes.client import rest

from mochaos.observe.history import APISERVER_OUTAGE

PERIOD = 0.25
"""Seconds between two probes."""
TIMEOUT = 1.0
"""A probe not answered within this long counts as the apiserver being unavailable."""

Period = Callable[..., object]
"""Records one end of a period: the recorder's :meth:`period`."""
SUBJECT = "apiserver"


class AvailabilityProbe:
    """Probes one apiserver from a thread until stopped; reports outages through ``period``."""

    def __init__(self, api: client.ApiClient, period: Period, stop: threading.Event) -> None:
        self._url = api.configuration.host.rstrip("/") + "/readyz"
        self._rest = rest.RESTClientObject(api.configuration)
        self._headers = {"User-Agent": api.user_agent}
        self._period = period
        self._stop = stop
        self.outages = 0

    def _answered(self) -> bool:
        try:
            resp = self._rest.pool_manager.request(
                "GET", self._url, headers=self._headers, timeout=TIMEOUT, retries=False
            )
        except Exception:
            return False
        return resp.status == 200

    def run(self) -> None:
        """Probe until the stop event is set."""
        down_since: float | None = None
        while not self._stop.wait(PERIOD):
            sent = time.time()
            if self._answered():
                if down_since is not None:
                    self._edge("end", time.time())
                    down_since = None
            elif down_since is None:
                down_since = sent
                self.outages += 1
                self._edge("start", sent)

    def _edge(self, edge: str, t: float) -> None:
        self._period(APISERVER_OUTAGE, edge, subject=SUBJECT, t=t)
