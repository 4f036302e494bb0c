"""Real SQL sessions on a CN: the proxy's preamble, held and released over the MySQL protocol.

The server below stands in for a CN's MySQL frontend with ``proxy-enabled``
(MatrixOne pkg/frontend: read the proxy's ExtraInfo for up to 200 ms, then
hand-shake with the salt it carried, ``mysql_native_password``), so PyMySQL
really connects and authenticates through what :class:`SqlSessions` sends.
"""

from __future__ import annotations

import hashlib
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from mochaos.errors import InfraError
from mochaos.matrixone.sessions import (
    PASSWORD,
    USER,
    SqlSessions,
    new_salt,
    port_forward,
    proxy_preamble,
    tcp,
)

PROXY_WAIT = 0.2
"""How long a CN with proxy-enabled waits for the preamble (frontend defaultSaltReadTimeout)."""


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if not byte & 0x80:
            return value, i


def decode_extra_info(body: bytes) -> dict[int, Any]:
    """The fields of a protobuf ExtraInfo: {field number: value}."""
    fields: dict[int, Any] = {}
    i = 0
    while i < len(body):
        key, i = _varint(body, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            fields[number], i = _varint(body, i)
        else:
            length, i = _varint(body, i)
            fields[number], i = body[i : i + length], i + length
    return fields


def native_password(password: str, salt: bytes) -> bytes:
    """mysql_native_password: SHA1(p) XOR SHA1(salt + SHA1(SHA1(p)))."""
    stage1 = hashlib.sha1(password.encode()).digest()
    stage2 = hashlib.sha1(salt + hashlib.sha1(stage1).digest()).digest()
    return bytes(a ^ b for a, b in zip(stage1, stage2, strict=True))


class CNFrontend:
    """A MySQL-protocol server behaving like a CN frontend with proxy-enabled (see module doc)."""

    def __init__(self, password: str = PASSWORD) -> None:
        self.password = password
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.preambles: list[dict[int, Any]] = []
        self.sessions: dict[int, bool] = {}  # live session id -> came through the proxy
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def live(self, *, from_proxy: bool | None = None) -> int:
        with self._lock:
            return sum(1 for p in self.sessions.values() if from_proxy in (None, p))

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _read(conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    def _packet(self, conn: socket.socket) -> bytes:
        header = self._read(conn, 4)
        return self._read(conn, int.from_bytes(header[:3], "little"))

    @staticmethod
    def _send(conn: socket.socket, seq: int, payload: bytes) -> None:
        conn.sendall(len(payload).to_bytes(3, "little") + bytes([seq]) + payload)

    def _serve(self, conn: socket.socket) -> None:
        sid = id(conn)
        try:
            salt, from_proxy = new_salt(), False
            conn.settimeout(PROXY_WAIT)
            try:
                size = int.from_bytes(self._read(conn, 2), "little")
                info = decode_extra_info(self._read(conn, size))
                self.preambles.append(info)
                salt, from_proxy = info[1], True
            except TimeoutError:
                pass
            conn.settimeout(10)
            caps = 0x1 | 0x200 | 0x2000 | 0x8000 | 0x80000  # long pw, 4.1, txn, secure, plugin
            self._send(conn, 0, b"".join([
                b"\x0a", b"8.0.30-MatrixOne-v1.2.3\x00", struct.pack("<I", 7), salt[:8], b"\x00",
                struct.pack("<H", caps & 0xFFFF), b"\x2d", struct.pack("<H", 2),
                struct.pack("<H", caps >> 16), bytes([21]), b"\x00" * 10, salt[8:], b"\x00",
                b"mysql_native_password\x00",
            ]))  # fmt: skip
            response = self._packet(conn)
            user_end = response.index(b"\x00", 32)
            user = response[32:user_end].decode()
            auth_len = response[user_end + 1]
            auth = response[user_end + 2 : user_end + 2 + auth_len]
            if user != USER or auth != native_password(self.password, salt):
                self._send(conn, 2, b"\xff" + struct.pack("<H", 1045) + b"#28000Access denied")
                return
            self._send(conn, 2, b"\x00\x00\x00\x02\x00\x00\x00")
            with self._lock:
                self.sessions[sid] = from_proxy
            while True:
                command = self._packet(conn)
                if command[:1] == b"\x01":  # COM_QUIT
                    return
                self._send(conn, 1, b"\x00\x00\x00\x02\x00\x00\x00")
        except (ConnectionError, OSError, ValueError):
            return
        finally:
            with self._lock:
                self.sessions.pop(sid, None)
            conn.close()

    def close(self) -> None:
        self.listener.close()


@pytest.fixture()
def cn() -> Iterator[CNFrontend]:
    server = CNFrontend()
    yield server
    server.close()


def until(check: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return check()


def test_the_preamble_is_the_proxys_extra_info_framed_by_its_length() -> None:
    salt = bytes(range(1, 21))
    data = proxy_preamble(salt=salt, connection_id=300, client_addr="ab")
    assert data == b"\x1d\x00" + b"\x0a\x14" + salt + b"\x18\xac\x02" + b"\x2a\x02ab"
    assert decode_extra_info(data[2:]) == {1: salt, 3: 300, 5: b"ab"}
    with pytest.raises(ValueError, match="salt is 20 bytes"):
        proxy_preamble(salt=b"short", connection_id=1, client_addr="x")


def test_salts_are_seven_bit_without_zero_or_dollar() -> None:
    for _ in range(200):
        salt = new_salt()
        assert len(salt) == 20
        assert all(0 < b < 0x80 and b != ord("$") for b in salt)


def test_hold_opens_sessions_that_the_cn_counts_as_proxy_sessions(cn: CNFrontend) -> None:
    sessions = SqlSessions(tcp("127.0.0.1", cn.port), progress=lambda line: None)
    sessions.hold("cn-0", 2)
    assert sessions.held("cn-0") == 2
    assert until(lambda: cn.live(from_proxy=True) == 2)
    assert cn.live(from_proxy=False) == 0
    assert [p[5] for p in cn.preambles] == [b"mochaos", b"mochaos"]
    assert len({p[3] for p in cn.preambles}) == 2  # a connection id each
    sessions.hold("cn-0", 1)
    assert until(lambda: cn.live() == 1)
    sessions.release("cn-0")
    assert sessions.held("cn-0") == 0
    assert until(lambda: cn.live() == 0)


def test_a_plain_session_without_the_preamble_is_not_a_proxy_session(cn: CNFrontend) -> None:
    import pymysql

    plain = pymysql.connect(host="127.0.0.1", port=cn.port, user=USER, password=PASSWORD)
    try:
        assert until(lambda: cn.live() == 1)
        assert cn.live(from_proxy=True) == 0  # the operator would count 0 sessions on this CN
    finally:
        plain.close()


def test_close_ends_the_sessions_of_every_pod(cn: CNFrontend) -> None:
    sessions = SqlSessions(tcp("127.0.0.1", cn.port), progress=lambda line: None)
    sessions.hold("cn-0", 1)
    sessions.hold("cn-1", 2)
    assert until(lambda: cn.live() == 3)
    sessions.close()
    assert until(lambda: cn.live() == 0)
    assert (sessions.held("cn-0"), sessions.held("cn-1")) == (0, 0)


def test_a_cn_that_refuses_the_login_is_an_infra_error_naming_the_pod() -> None:
    cn = CNFrontend(password="not-111")
    try:
        sessions = SqlSessions(tcp("127.0.0.1", cn.port), progress=lambda line: None)
        with pytest.raises(InfraError) as info:
            sessions.hold("cn-0", 1)
        assert str(info.value).startswith("cannot open a SQL session on CN pod cn-0: (1045, ")
        assert str(info.value).endswith(": check that cn-0 is Running and its CN listens on 6001")
        assert sessions.held("cn-0") == 0
    finally:
        cn.close()


def test_a_cn_that_never_answers_is_an_infra_error_not_a_hang() -> None:
    # A port-forward the loaded apiserver stalled: bytes go in, nothing comes back.
    silent = socket.create_server(("127.0.0.1", 0))
    port = silent.getsockname()[1]
    try:
        sessions = SqlSessions(tcp("127.0.0.1", port), progress=lambda line: None, timeout=0.5)
        t0 = time.monotonic()
        with pytest.raises(InfraError, match="cannot open a SQL session on CN pod cn-0"):
            sessions.hold("cn-0", 1)
        assert time.monotonic() - t0 < 15  # three tries of 0.5 s, 2 s apart
        assert sessions.held("cn-0") == 0
    finally:
        silent.close()


def test_a_port_forward_to_a_missing_pod_is_an_infra_error_local(cluster, namespace) -> None:
    from mochaos.kube import new_api_client

    api = new_api_client(cluster.kubeconfig, user_agent="mochaos/test-sessions")
    try:
        sessions = SqlSessions(port_forward(api, namespace), progress=lambda line: None)
        with pytest.raises(InfraError) as info:
            sessions.hold("cn-missing", 1)
        assert str(info.value).startswith("cannot open a SQL session on CN pod cn-missing: ")
    finally:
        api.close()
