"""List-then-watch of one resource kind in one namespace, resumable and stoppable.

The apiserver's watch is a long HTTP response of JSON lines. Three things can
end it: the server's timeout (resume from the last resourceVersion seen), a
410 Gone because that version was compacted away (relist, then report the
difference as synthetic events so no change is silently skipped), and a broken
connection (an apiserver restart: back off, then resume). The split follows
kopf's watching module: ``continuous_watch`` loops over ``watch_once`` streams,
``stream_events`` decodes one response.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from tenacity import Retrying, retry_if_exception_type, stop_never, wait_exponential
from urllib3.exceptions import HTTPError as Urllib3Error

from mochaos.kube import GROUP, VERSION, plural

WATCH_TIMEOUT_SECONDS = 120
"""Server-side watch timeout; the loop resumes from the last version seen."""

# Reconnecting to a restarting apiserver: quick first, then at most every 2 s, forever
# (until the recorder is stopped), so a restart loses no history.
RECONNECT_POLICY = dict(
    wait=wait_exponential(multiplier=0.05, max=2.0),
    stop=stop_never,
    retry=retry_if_exception_type((Urllib3Error, OSError, client.ApiException)),
    reraise=True,
)


class Gone(Exception):
    """The watch's resourceVersion is too old (HTTP 410): relist needed."""


class Stopped(Exception):
    """The watcher was asked to stop."""


@dataclass(frozen=True)
class RawEvent:
    """One decoded watch event (or a synthetic one from a relist)."""

    event: str
    obj: dict[str, Any]
    rv: int


Emit = Callable[[str, RawEvent], None]


def _rv(obj: dict[str, Any]) -> int:
    return int((obj.get("metadata") or {}).get("resourceVersion") or 0)


class KindWatcher:
    """Lists and watches one kind in one namespace, emitting every change in order."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        kind: str,
        namespace: str,
        emit: Emit,
        stop: threading.Event,
        list_call: Callable[..., Any] | None = None,
    ) -> None:
        self.kind = kind
        self.namespace = namespace
        self._emit = emit
        self._stop = stop
        self._core = client.CoreV1Api(api)
        self._custom = client.CustomObjectsApi(api)
        self._list_call = list_call
        self._response: Any = None
        self._lock = threading.Lock()
        self.known: dict[str, int] = {}
        self.last_rv = 0
        self.relists = 0
        self.reconnects = 0

    # -- API calls ------------------------------------------------------------

    def _call(self, **kwargs: Any) -> Any:
        ns = self.namespace
        if self._list_call is not None:
            return self._list_call(_preload_content=False, **kwargs)
        if self.kind == "Pod":
            return self._core.list_namespaced_pod(ns, _preload_content=False, **kwargs)
        if self.kind == "Event":
            return self._core.list_namespaced_event(ns, _preload_content=False, **kwargs)
        return self._custom.list_namespaced_custom_object(
            GROUP, VERSION, ns, plural(self.kind), _preload_content=False, **kwargs
        )

    def list(self) -> tuple[int, list[dict[str, Any]]]:
        """A consistent LIST: (collection resourceVersion, objects with kind set)."""
        resp = self._call(_request_timeout=10)
        body = json.loads(resp.data)
        items = body.get("items") or []
        for obj in items:
            obj.setdefault("kind", self.kind)
        return int(body["metadata"]["resourceVersion"]), items

    # -- the loop ---------------------------------------------------------------

    def initial_list(self) -> int:
        """List once, emit ADDED for what exists, and return the version to watch from."""
        rv, items = self.list()
        for obj in sorted(items, key=_rv):
            self._record("ADDED", obj)
        self.last_rv = rv
        return rv

    def continuous_watch(self) -> None:
        """Watch until stopped, resuming after timeouts, relisting after 410, reconnecting."""
        while not self._stop.is_set():
            try:
                for attempt in Retrying(**RECONNECT_POLICY):
                    with attempt:
                        if self._stop.is_set():
                            return
                        if attempt.retry_state.attempt_number > 1:
                            self.reconnects += 1
                        self.watch_once()
            except Gone:
                # The version we hold was compacted: relist and diff, so nothing is lost.
                self.relists += 1
                self.relist()
            except Stopped:
                return
            except Exception:
                if self._stop.is_set():
                    return
                raise

    def watch_once(self) -> None:
        """One watch request from ``last_rv`` until the server ends it."""
        resp = self._call(
            watch=True,
            resource_version=str(self.last_rv),
            allow_watch_bookmarks=True,
            timeout_seconds=WATCH_TIMEOUT_SECONDS,
            _request_timeout=(5, WATCH_TIMEOUT_SECONDS + 30),
        )
        with self._lock:
            self._response = resp
        try:
            for event in stream_events(resp, self._stop):
                self._handle(event)
        finally:
            with self._lock:
                self._response = None
            resp.release_conn()
        if self._stop.is_set():
            raise Stopped

    def _handle(self, event: dict[str, Any]) -> None:
        etype = event.get("type")
        obj = event.get("object") or {}
        if etype == "ERROR":
            if obj.get("code") == 410:
                raise Gone
            raise client.ApiException(status=obj.get("code"), reason=obj.get("message"))
        if etype == "BOOKMARK":
            self.last_rv = max(self.last_rv, _rv(obj))
            return
        obj.setdefault("kind", self.kind)
        self._record(etype, obj)

    def _record(self, etype: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        rv = _rv(obj)
        if etype == "DELETED":
            self.known.pop(name, None)
        else:
            self.known[name] = rv
        self.last_rv = max(self.last_rv, rv)
        self._emit(self.kind, RawEvent(etype, obj, rv))

    def relist(self) -> None:
        """List again and emit what changed since the last version we saw."""
        rv, items = self.list()
        current = {o["metadata"]["name"]: o for o in items}
        for name in sorted(set(self.known) - set(current)):
            gone = {
                "kind": self.kind,
                "metadata": {"name": name, "namespace": self.namespace, "resourceVersion": str(rv)},
            }
            self._record("DELETED", gone)
        for obj in sorted(current.values(), key=_rv):
            name = obj["metadata"]["name"]
            if name not in self.known:
                self._record("ADDED", obj)
            elif self.known[name] != _rv(obj):
                self._record("MODIFIED", obj)
        self.last_rv = max(self.last_rv, rv)

    def stop(self) -> None:
        """Interrupt a blocked read of the current watch response."""
        with self._lock:
            resp = self._response
        if resp is not None:
            with contextlib.suppress(Exception):  # already closed
                resp.shutdown()


def stream_events(resp: Any, stop: threading.Event) -> Iterator[dict[str, Any]]:
    """Decode a watch response into event dicts, one JSON object per line."""
    buf = b""
    for chunk in resp.stream(amt=None, decode_content=True):
        if stop.is_set():
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            if line.strip():
                yield json.loads(line)
    if buf.strip():
        yield json.loads(buf)
