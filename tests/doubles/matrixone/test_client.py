"""The control client's decoding and error mapping, against a canned HTTP server."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from mochaos.doubles import DoubleContext
from mochaos.doubles.matrixone import SPEC, address_pool, files
from mochaos.doubles.matrixone.client import (
    ComponentFault,
    ControlClient,
    LockState,
    Refused,
    Sessions,
)
from mochaos.errors import InfraError, UsageError

STORES = {
    "namespace": "ns",
    "address": "127.100.0.2",
    "hakeeperState": "HAKeeperRunning",
    "cnStores": [
        {"uuid": "u-1", "pod": "cn-1", "workState": "Working", "state": "NormalState",
         "labels": {"account": ["sys"]}, "queryAddress": "127.100.0.2:40003"},
    ],
    "tnStores": [
        {"uuid": "t-1", "pod": "tn-0", "state": "NormalState",
         "lockServiceAddress": "tn-0.h.ns.svc:6003"},
    ],
}  # fmt: skip

# path -> (status, body); PUT bodies are recorded.
ROUTES: dict[tuple[str, str], tuple[int, dict]] = {
    ("GET", "/healthz"): (200, {"status": "ok"}),
    ("GET", "/v1/namespaces/ns/stores"): (200, STORES),
    ("PUT", "/v1/namespaces/ns/pods/cn-1/sessions"): (
        200, {"sessions": {"count": 3, "account": "tenant1", "fromProxy": True}}),
    ("PUT", "/v1/namespaces/ns/pods/cn-1/lock"): (
        200, {"lock": {"bound": True, "remainTxns": 2, "status": "normal"}}),
    ("PUT", "/v1/namespaces/ns/pods/gone/sessions"): (
        404, {"error": "pod ns/gone runs no CN store"}),
    ("GET", "/v1/namespaces/ns/pods/cn-1/replicas"): (500, {"error": "HAKeeper: timeout"}),
    ("PUT", "/v1/namespaces/ns/faults/hakeeper"): (200, {"mode": "down", "fault": {
        "component": "hakeeper", "how": "hang", "since": "2026-01-01T00:00:00Z",
        "addresses": ["127.100.0.2:32001"]}}),
    ("PUT", "/v1/namespaces/ns/faults/query/gone"): (
        404, {"error": "namespace ns runs no CN store for pod gone"}),
    ("GET", "/v1/namespaces/ns/faults"): (200, {"namespace": "ns", "faults": [
        {"component": "lockservice", "how": "refuse", "addresses": ["127.100.0.2:6003"]}]}),
}  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, str, dict]]] = []

    def _answer(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}") if length else {}
        self.received.append((method, self.path, body))
        status, payload = ROUTES.get((method, self.path), (404, {"error": "no route"}))
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._answer("GET")

    def do_PUT(self) -> None:
        self._answer("PUT")

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    _Handler.received.clear()
    yield f"127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_stores_decode(server: str) -> None:
    stores = ControlClient(server).stores("ns")
    assert stores.hakeeper_state == "HAKeeperRunning"
    cn = stores.cn_by_pod("cn-1")
    assert cn is not None and cn.work_state == "Working" and cn.labels == {"account": ["sys"]}
    assert stores.cn_by_uuid("u-1") is cn and stores.cn_by_pod("cn-2") is None
    assert stores.tn[0].lock_service_address == "tn-0.h.ns.svc:6003"


def test_knobs_send_only_what_is_given(server: str) -> None:
    mo = ControlClient(server)
    assert mo.set_sessions("ns", "cn-1", 3) == Sessions(3, "tenant1", True)
    assert mo.set_lock("ns", "cn-1", remain_txns=2) == LockState(True, 2, "normal")
    assert _Handler.received[0] == ("PUT", "/v1/namespaces/ns/pods/cn-1/sessions", {"count": 3})
    assert _Handler.received[1][2] == {"remainTxns": 2}


def test_errors_are_usage_or_infrastructure(server: str) -> None:
    mo = ControlClient(server)
    with pytest.raises(UsageError, match="runs no CN store"):
        mo.set_sessions("ns", "gone", 1)
    with pytest.raises(InfraError, match="HAKeeper: timeout"):
        mo.replicas("ns", "cn-1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(InfraError, match="not reachable"):
        ControlClient(closed, timeout=2).stores("ns")
    assert "not answering" in (ControlClient(closed, timeout=2).health_problem() or "")


def test_faults_go_down_and_up_and_a_missing_component_is_refused_with_its_status(
    server: str,
) -> None:
    mo = ControlClient(server)
    assert mo.set_fault("ns", "hakeeper", down=True, how="hang") == ComponentFault(
        "hakeeper", "hang", ("127.100.0.2:32001",)
    )
    assert _Handler.received[-1] == ("PUT", "/v1/namespaces/ns/faults/hakeeper",
                                     {"mode": "down", "how": "hang"})  # fmt: skip
    mo.set_fault("ns", "hakeeper", down=False)
    assert _Handler.received[-1][2] == {"mode": "up"}
    with pytest.raises(Refused, match="runs no CN store for pod gone") as err:
        mo.set_fault("ns", "query/gone", down=True)
    assert err.value.status == 404 and isinstance(err.value, UsageError)
    assert mo.faults("ns") == [ComponentFault("lockservice", "refuse", ("127.100.0.2:6003",))]


def test_health_through_the_spec(server: str, tmp_path: Path) -> None:
    ctx = DoubleContext("c", tmp_path / "kubeconfig", tmp_path, tmp_path / "log")
    assert "no control address" in (SPEC.health(ctx) or "")
    (tmp_path / files.CONTROL_ADDRESS).write_text(server + "\n")
    assert SPEC.health(ctx) is None
    ROUTES[("GET", "/healthz")] = (503, {"error": "namespace ns: 127.100.0.2:32001 busy"})
    try:
        assert SPEC.health(ctx) == "namespace ns: 127.100.0.2:32001 busy"
    finally:
        ROUTES[("GET", "/healthz")] = (200, {"status": "ok"})


def test_command_passes_the_cluster_and_its_address_pool(tmp_path: Path) -> None:
    ctx = DoubleContext("mine", tmp_path / "kc", tmp_path / "state", tmp_path / "log")
    argv = SPEC.command(ctx)
    assert argv[0].endswith("/matrixone-double")
    state, pool = str(tmp_path / "state"), address_pool("mine")
    assert argv[1:] == ["--kubeconfig", str(tmp_path / "kc"), "--state-dir", state,
                        "--address-pool", pool]  # fmt: skip


def test_address_pools_are_loopback_and_stable() -> None:
    assert address_pool("a") == address_pool("a")
    pools = {address_pool(n) for n in ("a", "b", "mochaos", "modouble", "kruise")}
    assert len(pools) > 1
    assert all(p.startswith("127.") and p.endswith(".0.0/16") for p in pools)


def test_event_reader_skips_a_partial_line(tmp_path: Path) -> None:
    good = {"time": "t", "namespace": "ns", "service": "store", "method": "added"}
    other = {**good, "namespace": "other"}
    (tmp_path / files.EVENTS).write_text(
        json.dumps(good) + "\n" + json.dumps(other) + "\n" + '{"time": "t2", "names'
    )
    assert files.read_events(tmp_path) == [good, other]
    assert files.read_events(tmp_path, "ns") == [good]
    assert files.read_events(tmp_path / "missing") == []
