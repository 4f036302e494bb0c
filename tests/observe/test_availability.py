"""The availability probe marks the periods an apiserver does not answer /readyz."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client

from mochaos.observe.availability import PERIOD, TIMEOUT, AvailabilityProbe


class Frozen:
    """Whether the fake apiserver answers."""

    def __init__(self) -> None:
        self.event = threading.Event()


@pytest.fixture
def server() -> Iterator[tuple[str, Frozen]]:
    """A /readyz endpoint that stops answering while frozen (like a SIGSTOPped apiserver)."""
    frozen = Frozen()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            while frozen.event.is_set():
                time.sleep(0.05)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            """Quiet."""

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", frozen
    frozen.event.clear()
    httpd.shutdown()


def test_a_frozen_apiserver_is_one_outage_from_the_first_unanswered_probe(server):
    url, frozen = server
    cfg = client.Configuration()
    cfg.host = url
    api = client.ApiClient(cfg)
    marks: list[tuple[str, float]] = []
    stop = threading.Event()
    probe = AvailabilityProbe(
        api, lambda kind, edge, *, subject, t: marks.append((f"{kind.name} {edge}", t)), stop
    )
    thread = threading.Thread(target=probe.run, daemon=True)
    thread.start()
    try:
        time.sleep(1.0)
        assert marks == [], "an answering apiserver is not an outage"
        frozen.event.set()
        froze_at = time.time()
        time.sleep(3 * TIMEOUT)
        frozen.event.clear()
        thawed_at = time.time()
        deadline = time.monotonic() + 10
        while len(marks) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(timeout=5)
    (down, down_t), (up, up_t) = marks
    assert (down, up) == ("apiserver-outage start", "apiserver-outage end")
    assert froze_at - PERIOD <= down_t < froze_at + 1, "starts at the first unanswered probe"
    assert up_t >= thawed_at
    assert probe.outages == 1
