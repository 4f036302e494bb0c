"""Follow an operator pod's log across restarts, keeping when each line arrived and in what order.

The operator's own ``ts`` has one-second resolution (zap's RFC 3339 encoder,
matrixone-operator cmd/operator/main.go:106), too coarse to order its lines
against watch events. So each line is handed on, in the order received, as a
:class:`LogLine`: the text unchanged, plus ``written`` (the kubelet's
nanosecond timestamp, asked for with ``timestamps=true``) and ``received``
(our clock when the line arrived). Consumers that order log rows by the watch
events they caused use these, not the line's ``ts``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

LOG_IDLE_TIMEOUT = 5.0
"""A log stream silent this long is reopened (and ``stop`` checked)."""
NO_POD_POLL = 1.0
"""How often to look for a running pod while there is none."""


class LogLine(str):
    """One log line's text, with when the kubelet wrote it and when we received it (epoch s)."""

    written: float
    received: float

    def __new__(cls, text: str, *, written: float, received: float) -> LogLine:
        line = super().__new__(cls, text)
        line.written = written
        line.received = received
        return line


def parse_log_timestamp(text: str) -> int:
    """Nanoseconds since the epoch of a kubelet log timestamp (RFC 3339, up to ns)."""
    seconds, _, rest = text.rstrip("Z").partition(".")
    base = datetime.strptime(seconds, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return int(base.timestamp()) * 1_000_000_000 + int((rest + "000000000")[:9] or 0)


def split_log_line(raw: str) -> tuple[int, str] | None:
    """(timestamp ns, line) of a ``timestamps=true`` log line; None when it has no stamp."""
    stamp, _, line = raw.partition(" ")
    try:
        return parse_log_timestamp(stamp), line
    except ValueError:
        return None


class PodLogFollower:
    """The log of whichever pod matching ``selector`` runs, from ``started_ns`` on.

    ``core`` is a CoreV1Api (tests pass a fake); ``clock`` gives the receive time.
    """

    def __init__(
        self,
        *,
        core: Callable[[], Any],
        namespace: str,
        selector: str,
        started_ns: int,
        log_path: Path | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._core = core
        self.namespace = namespace
        self.selector = selector
        self.started_ns = started_ns
        self.log_path = log_path
        self._clock = clock

    def pods(self) -> list[Any]:
        """The matching pods, newest first."""
        items = (
            self._core()
            .list_namespaced_pod(self.namespace, label_selector=self.selector, _request_timeout=10)
            .items
        )
        return sorted(items, key=lambda p: p.metadata.creation_timestamp, reverse=True)

    def running_pod(self) -> Any | None:
        """The newest Running pod that is not being deleted (None when there is none)."""
        for pod in self.pods():
            if pod.metadata.deletion_timestamp is None and pod.status.phase == "Running":
                return pod
        return None

    def follow(self, stop: threading.Event) -> Iterator[LogLine]:
        """Yield the log lines written since ``started_ns``, across pod restarts, in order.

        Each stream asks the kubelet for timestamps; a line at or before the
        last one seen from that pod is a repeat after a reconnect and is
        skipped. A pod that restarts or is replaced ends the stream; the next
        running pod is followed from its first line.
        """
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        last_seen: dict[str, int] = {}
        sink = self.log_path.open("a", encoding="utf-8") if self.log_path else None
        try:
            while not stop.is_set():
                pod = self._safe(self.running_pod)
                if pod is None:
                    stop.wait(NO_POD_POLL)
                    continue
                uid = pod.metadata.uid
                after = last_seen.get(uid, self.started_ns)
                try:
                    for stamp, text in self._stream(pod.metadata.name, after):
                        if stamp <= after:
                            continue
                        after = last_seen[uid] = stamp
                        if sink:
                            sink.write(text + "\n")
                            sink.flush()
                        yield LogLine(text, written=stamp / 1e9, received=self._clock())
                        if stop.is_set():
                            return
                except (HTTPError, ApiException, OSError):
                    stop.wait(0.5)
        finally:
            if sink:
                sink.close()

    def _stream(self, pod: str, after_ns: int) -> Iterator[tuple[int, str]]:
        since = max(1, int((time.time_ns() - after_ns) / 1e9) + 2)
        resp = self._core().read_namespaced_pod_log(
            pod,
            self.namespace,
            follow=True,
            timestamps=True,
            since_seconds=since,
            _preload_content=False,
            _request_timeout=(10, LOG_IDLE_TIMEOUT),
        )
        try:
            buf = b""
            for chunk in resp.stream(4096, decode_content=True):
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for raw in lines:
                    parsed = split_log_line(raw.decode(errors="replace"))
                    if parsed:
                        yield parsed
        finally:
            resp.release_conn()

    @staticmethod
    def _safe(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception:
            return None
