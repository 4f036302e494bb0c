"""Kubernetes Events of the reconcilers, sent like client-go's event recorder.

Events go out asynchronously and pass client-go's default correlator first
(:class:`Correlator`): similar events combined, repeats counted, spam dropped.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mochaos.ctrl.rest import EVENTS, ApiError, Kind, Kube, NotFound, Obj
from mochaos.model.logs import Logger

NORMAL = "Normal"
WARNING = "Warning"

AGGREGATE_MAX = 10
AGGREGATE_WINDOW = 600.0
SPAM_BURST = 25
SPAM_REFILL = 1 / 300


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True)
class _Similar:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass(slots=True)
class _Seen:
    name: str
    count: int
    first: str


@dataclass(slots=True)
class _Bucket:
    tokens: float
    last: float


class Correlator:
    """client-go's EventCorrelator with its default options, over plain event dicts.

    More than 10 similar events (same object and reason, different message) within 10 min
    are combined, a repeat of an identical event bumps ``count`` instead of creating a new
    one, and each object gets a burst of 25 events refilled at one per 5 min.
    """

    def __init__(self) -> None:
        self._similar: dict[tuple, _Similar] = {}
        self._seen: dict[tuple, _Seen] = {}
        self._buckets: dict[tuple, _Bucket] = {}

    def correlate(self, event: Obj, now: float) -> tuple[Obj, bool] | None:
        """The event to send and whether it updates an earlier one; None when dropped."""
        ref = event["involvedObject"]
        obj_key = (event["source"]["component"], ref["kind"], ref["namespace"], ref["name"])
        obj_key += (ref.get("uid", ""),)
        similar_key = (*obj_key, event["type"], event["reason"])
        similar = self._similar.get(similar_key)
        if similar is None or now - similar.last > AGGREGATE_WINDOW:
            similar = self._similar[similar_key] = _Similar()
        similar.messages.add(event["message"])
        similar.last = now
        if len(similar.messages) >= AGGREGATE_MAX:
            event["message"] = "(combined from similar events): " + event["message"]
        if not self._allow(obj_key, now):
            return None
        seen_key = (*similar_key, event["message"])
        seen = self._seen.get(seen_key)
        if seen is None:
            self._seen[seen_key] = _Seen(event["metadata"]["name"], 1, event["firstTimestamp"])
            return event, False
        seen.count += 1
        event["metadata"]["name"] = seen.name
        event["count"] = seen.count
        event["firstTimestamp"] = seen.first
        return event, True

    def forget(self, event: Obj) -> None:
        """Drop the dedup record of an event that could not be updated (it was deleted)."""
        ref = event["involvedObject"]
        key = (event["source"]["component"], ref["kind"], ref["namespace"], ref["name"])
        key += (ref.get("uid", ""), event["type"], event["reason"], event["message"])
        self._seen.pop(key, None)

    def _allow(self, key: tuple, now: float) -> bool:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(SPAM_BURST, now)
        bucket.tokens = min(SPAM_BURST, bucket.tokens + (now - bucket.last) * SPAM_REFILL)
        bucket.last = now
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True


class EventRecorder:
    """Queues events of reconciled objects and writes them from a background thread."""

    def __init__(self, kube: Kube, *, log: Logger) -> None:
        self._kube = kube
        self._log = log
        self._queue: queue.Queue[Obj | None] = queue.Queue()
        self._correlator = Correlator()

    def emit(
        self, obj: Obj, kind: Kind, *, component: str, type_: str, reason: str, message: str
    ) -> None:
        """Record one event about ``obj`` (returns at once, like EventRecorder.Event)."""
        m = obj.get("metadata", {})
        now = time.time()
        self._queue.put(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    "name": f"{m.get('name')}.{time.time_ns():x}",
                    "namespace": m.get("namespace"),
                },
                "involvedObject": {
                    "apiVersion": kind.api_version,
                    "kind": kind.kind,
                    "namespace": m.get("namespace"),
                    "name": m.get("name"),
                    "uid": m.get("uid", ""),
                    "resourceVersion": m.get("resourceVersion", ""),
                },
                "reason": reason,
                "message": message,
                "type": type_,
                "source": {"component": component},
                "reportingComponent": component,
                "reportingInstance": "",
                "firstTimestamp": _stamp(now),
                "lastTimestamp": _stamp(now),
                "count": 1,
            }
        )

    def run(self, stop: threading.Event) -> None:
        """Thread body: correlate and send events until ``stop`` is set."""
        while not stop.is_set():
            try:
                event = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            if event is not None:
                self._send(event)

    def _send(self, event: Obj) -> None:
        result = self._correlator.correlate(event, time.time())
        if result is None:
            return
        event, is_update = result
        ns = event["metadata"]["namespace"]
        try:
            if is_update:
                try:
                    self._kube.merge_patch(
                        EVENTS,
                        ns,
                        event["metadata"]["name"],
                        {"count": event["count"], "lastTimestamp": event["lastTimestamp"]},
                    )
                    return
                except NotFound:
                    self._correlator.forget(event)
            self._kube.create(EVENTS, ns, event)
        except ApiError as err:
            self._log.info(
                "Server rejected event (will not retry!)",
                caller="record/event.go:315",
                error=str(err),
                reason=event["reason"],
            )
