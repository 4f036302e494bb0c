"""Real SQL sessions held open on a CN pod: what keeps a real drain from completing.

The operator never learns sessions from us: its CN-store controller asks the
CN's query service (``ShowProcessList``) every 30 s and writes the count into
the pod's ``matrixorigin.io/score`` and deletion-cost annotations
(matrixone-operator 2301e3b, pkg/controllers/cnstore/controller.go:483-602).
So on kind we hold real MySQL-protocol sessions (PyMySQL) and never write
those annotations ourselves.

Which sessions count: for MatrixOne >= 1.1.2 / 1.2.0 / 2.0 (the
``SessionSource`` feature) only sessions marked as coming from MatrixOne's
proxy (controller.go:584-586). A CN marks a session so when, with
``[cn.frontend] proxy-enabled = true``, the first bytes on the connection are
the proxy's ``ExtraInfo`` (salt, connection id, labels, client address) sent
before the MySQL handshake (MatrixOne pkg/frontend/mysql_protocol.go
``receiveExtraInfo``; pkg/proxy/server_conn.go ``Connect``; encoding in
pkg/pb/proxy/proxy.go: 2-byte little-endian length, then the protobuf). The
pool template therefore turns ``proxy-enabled`` on (manifests/matrixone/cnpool.yaml) and
every session we open starts with that preamble, as the proxy's would; no
proxy runs, so nothing migrates the sessions away and a drain stays open
until we release them (or the operator's drain timeout passes). Written from
the MatrixOne revision the operator pins (fa8af5c4dad4) and run against a real
1.2.3 CN started by the operator's own start script (the lab's trial, ``lab/trial/``):
``show processlist`` lists the held sessions with ``client_host`` = our
``CLIENT_ADDR`` and ``proxy_host`` set, i.e. ``FromProxy``; without the preamble
the same sessions are listed with the peer's address and no proxy host.

Transport: a port-forward through the apiserver to the pod's SQL port (6001),
one per session. It needs no route from the host to pod IPs and no helper
image on kind's Docker network (none can be pulled here), works the same on
Docker Desktop, and closing it ends the session.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_fixed

from mochaos.errors import InfraError
from mochaos.tooling.extras import import_extra
from mochaos.tooling.progress_callback import Progress, say

SQL_PORT = 6001
"""A CN's MySQL port (matrixone-operator pkg/controllers/cnset/utils.go:25 ``CNSQLPort``)."""
USER = "root"
PASSWORD = "111"
"""MatrixOne's root account without DEFAULT_PASSWORD (frontend/authenticate.go)."""
CLIENT_ADDR = "mochaos"
SALT_LENGTH = 20
CONNECT_TIMEOUT = 30.0
LOST_CONNECTION = (2003, 2006, 2013)
"""MySQL client errors of a connection that failed or went silent (not a refused login)."""


def _transient(err: BaseException) -> bool:
    """A session opening that failed on its transport, worth another try."""
    cause = err.__cause__
    if isinstance(cause, OSError):
        return True
    args = getattr(cause, "args", ())
    code = args[0] if args else None
    return type(cause).__name__ == "OperationalError" and code in LOST_CONNECTION


OPEN_RETRY = {
    "retry": retry_if_exception(_transient),
    "stop": stop_after_attempt(3),
    "wait": wait_fixed(2),
    "reraise": True,
}
"""A session whose transport failed or went silent (a stalled or broken port-forward) is
tried again; a refused login is not."""


class Sessions(Protocol):
    """Sessions held on the CN pods of one test namespace (real ones on kind, a double locally)."""

    def hold(self, pod: str, n: int) -> None:
        """Keep exactly ``n`` sessions open on ``pod`` (opens or closes the difference)."""
        ...

    def release(self, pod: str) -> None:
        """Close every session held on ``pod`` (same as ``hold(pod, 0)``)."""
        ...

    def close(self) -> None:
        """Close every session held on every pod (idempotent)."""
        ...


# -- the proxy's preamble -------------------------------------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def proxy_preamble(*, salt: bytes, connection_id: int, client_addr: str) -> bytes:
    """MatrixOne's proxy ``ExtraInfo`` as the proxy writes it before the MySQL handshake.

    Fields (pkg/pb/proxy/proxy.pb.go): 1 Salt (bytes), 2 InternalConn (bool,
    false: left out), 3 ConnectionID (uint32), 4 Label (map, empty: left out),
    5 ClientAddr (string); framed by its length as two little-endian bytes.
    """
    if len(salt) != SALT_LENGTH:
        raise ValueError(f"the proxy's salt is {SALT_LENGTH} bytes, got {len(salt)}")
    body = (
        _field(1, salt)
        + _varint(3 << 3 | 0)
        + _varint(connection_id)
        + _field(5, client_addr.encode())
    )
    return len(body).to_bytes(2, "little") + body


def new_salt() -> bytes:
    """A salt as MatrixOne makes one: 7-bit, never 0 nor ``$`` (frontend ``generate_salt``)."""
    salt = bytearray(b & 0x7F for b in secrets.token_bytes(SALT_LENGTH))
    for i, b in enumerate(salt):
        if b in (0, ord("$")):
            salt[i] = b + 1
    return bytes(salt)


def new_connection_id() -> int:
    """A connection id far above the ones HAKeeper allocates (they count up from 1)."""
    return 0x70000000 + secrets.randbelow(0x0FFFFFFF)


# -- transports ------------------------------------------------------------------------------

Close = Callable[[], None]
Connect = Callable[[str], tuple[Any, Close]]
"""Open a byte stream to a pod's SQL port: (socket-like object, close)."""


def port_forward(api_client: Any, namespace: str, *, port: int = SQL_PORT) -> Connect:
    """Streams to ``port`` of pods in ``namespace`` through the apiserver (a dedicated client).

    kubernetes.stream swaps the ApiClient's request method while it opens a
    websocket, so ``api_client`` must not be shared with other threads.
    """
    from kubernetes import client
    from kubernetes.stream import portforward

    core = client.CoreV1Api(api_client)
    lock = threading.Lock()

    def connect(pod: str) -> tuple[Any, Close]:
        with lock:
            forward = portforward(
                core.connect_get_namespaced_pod_portforward, pod, namespace, ports=str(port)
            )
        return forward.socket(port), forward.close

    return connect


def tcp(host: str, port: int) -> Connect:
    """Streams to ``host:port`` whatever the pod (for a CN reachable directly, and for tests)."""

    def connect(pod: str) -> tuple[Any, Close]:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
        return sock, sock.close

    return connect


# -- the sessions ---------------------------------------------------------------------------


def _nothing() -> None:
    """Close nothing (no stream was opened)."""


@dataclass(slots=True)
class _Session:
    connection: Any
    close_stream: Close

    def close(self) -> None:
        with contextlib.suppress(Exception):  # already closed by the other side
            self.connection.close()
        self.close_stream()


class SqlSessions:
    """Sessions opened through ``connect`` with the proxy's preamble (see the module docstring)."""

    def __init__(
        self,
        connect: Connect,
        *,
        user: str = USER,
        password: str = PASSWORD,
        progress: Progress = say,
        timeout: float = CONNECT_TIMEOUT,
    ) -> None:
        self.timeout = timeout
        self._pymysql = import_extra("pymysql", why="holding SQL sessions on MatrixOne's CNs")
        self._connect = connect
        self.user = user
        self.password = password
        self.progress = progress
        self._held: dict[str, list[_Session]] = {}
        self._lock = threading.Lock()

    def held(self, pod: str) -> int:
        """How many sessions are held on ``pod``."""
        with self._lock:
            return len(self._held.get(pod, []))

    def hold(self, pod: str, n: int) -> None:
        """Keep exactly ``n`` sessions open on ``pod``."""
        if n < 0:
            raise ValueError(f"cannot hold {n} sessions")
        with self._lock:
            held = self._held.setdefault(pod, [])
            try:
                while len(held) > n:
                    held.pop().close()
                while len(held) < n:
                    held.append(Retrying(**OPEN_RETRY)(self._open, pod))
            finally:
                if not held:
                    del self._held[pod]
        self.progress(f"holding {n} SQL session(s) on CN pod {pod}")

    def release(self, pod: str) -> None:
        """Close every session held on ``pod``."""
        self.hold(pod, 0)

    def close(self) -> None:
        """Close every session on every pod."""
        with self._lock:
            held, self._held = self._held, {}
        for sessions in held.values():
            for session in sessions:
                session.close()

    def query(self, pod: str, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Run one statement in a session of its own on ``pod`` (opened the same way as the
        held ones, then closed): its column names and rows."""
        session = self._open(pod)
        try:
            with session.connection.cursor() as cursor:
                cursor.execute(sql)
                columns = [d[0] for d in cursor.description or ()]
                return columns, list(cursor.fetchall())
        finally:
            session.close()

    def _open(self, pod: str) -> _Session:
        connection = self._pymysql.connections.Connection(
            user=self.user,
            password=self.password,
            connect_timeout=self.timeout,
            # A stream handed to PyMySQL gets only the read timeout: without one a handshake
            # over a port-forward the loaded apiserver stalled waited forever (seen on kind).
            read_timeout=self.timeout,
            write_timeout=self.timeout,
            autocommit=True,
            defer_connect=True,
        )
        close_stream: Close = _nothing
        try:
            stream, close_stream = self._connect(pod)
            preamble = proxy_preamble(
                salt=new_salt(), connection_id=new_connection_id(), client_addr=CLIENT_ADDR
            )
            stream.sendall(preamble)
            connection.connect(stream)
        except Exception as err:
            close_stream()
            raise InfraError(
                f"cannot open a SQL session on CN pod {pod}: {str(err).splitlines()[0][:200]}",
                hint=f"check that {pod} is Running and its CN listens on {SQL_PORT}",
            ) from err
        return _Session(connection, close_stream)
