"""Typed client of the MatrixOne double's control interface (HTTP + JSON on 127.0.0.1).

Scenarios hold sessions on a CN (the platform agent's "drain" is a CN with open sessions)
and release them, set replica / pipeline counts and lock-service state, make a component
the operator dials unreachable and bring it back (a fault), and read what HAKeeper
reports::

    mo = ControlClient.from_state_dir(state_dir)
    mo.set_sessions("ns", "pool-cn-x7k2p", 3)
    assert mo.stores("ns").cn_by_pod("pool-cn-x7k2p").work_state == "Working"
    mo.set_fault("ns", "hakeeper", down=True, how="hang")
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mochaos.doubles.matrixone import files
from mochaos.errors import InfraError, UsageError


@dataclass(frozen=True)
class CNStore:
    """A CN store as HAKeeper's cluster details report it."""

    uuid: str
    pod: str
    work_state: str
    """``Working``, ``Draining``, ``Drained`` (MatrixOne metadata.WorkState)."""
    state: str
    """``NormalState`` or ``TimeoutState`` (heartbeats stopped)."""
    labels: dict[str, list[str]]
    query_address: str
    sql_address: str
    lock_service_address: str
    pipeline_service_address: str


@dataclass(frozen=True)
class TNStore:
    """A TN store as HAKeeper's cluster details report it."""

    uuid: str
    pod: str
    state: str
    lock_service_address: str


@dataclass(frozen=True)
class Stores:
    """One namespace's cluster details, read from its HAKeeper."""

    namespace: str
    address: str
    hakeeper_state: str
    cn: tuple[CNStore, ...]
    tn: tuple[TNStore, ...]

    def cn_by_pod(self, pod: str) -> CNStore | None:
        """The CN store of a pod, or None when HAKeeper does not list it."""
        return next((s for s in self.cn if s.pod == pod), None)

    def cn_by_uuid(self, uuid: str) -> CNStore | None:
        """The CN store with that UUID, or None."""
        return next((s for s in self.cn if s.uuid == uuid), None)


@dataclass(frozen=True)
class Sessions:
    """What a CN's SHOW PROCESSLIST reports: ``count`` sessions of ``account``."""

    count: int
    account: str
    from_proxy: bool


@dataclass(frozen=True)
class ComponentFault:
    """A component of a namespace's MatrixOne that a fault holds down (or just released)."""

    component: str
    """``hakeeper``, ``lockservice`` or ``query/<pod>`` (mochaos.ctrl.mo_components)."""
    how: str
    """``refuse`` or ``hang``; empty in the answer to an up."""
    addresses: tuple[str, ...]
    """Where the operator dials it."""


class Refused(UsageError):
    """The double refused a call: bad input (``status`` 400) or nothing of that name
    (404: an unknown namespace or pod, a component with nothing running)."""

    def __init__(self, what: str, *, hint: str = "", status: int) -> None:
        super().__init__(what, hint=hint)
        self.status = status


@dataclass(frozen=True)
class LockState:
    """What the TN's lock-table allocator knows of a CN's lock service."""

    bound: bool
    remain_txns: int
    status: str
    """``normal``, ``lockWaiting`` (restart requested) or ``canRestart``."""


class ControlClient:
    """Calls the control interface of one running double."""

    def __init__(self, address: str, *, timeout: float = 10.0) -> None:
        self.address = address
        self.timeout = timeout

    @classmethod
    def from_state_dir(cls, state_dir: Path, *, timeout: float = 10.0) -> ControlClient:
        """The client of the double whose state dir this is (InfraError if not running)."""
        address = files.control_address(state_dir)
        if address is None:
            raise InfraError(
                f"the MatrixOne double has no control address in {state_dir}",
                hint="it is not running; see its log next to that folder",
            )
        return cls(address, timeout=timeout)

    # -- transport ---------------------------------------------------------

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"http://{self.address}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            try:
                message = json.loads(err.read() or b"{}").get("error", err.reason)
            except json.JSONDecodeError:
                message = str(err.reason)
            if err.code in (400, 404):
                raise Refused(
                    f"MatrixOne double: {message}", hint=f"{method} {path}", status=err.code
                ) from err
            raise InfraError(f"MatrixOne double: {message}", hint=f"{method} {path}") from err
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise InfraError(
                f"MatrixOne double not reachable at {self.address}: {reason}",
                hint="is it running? see its log",
            ) from err

    # -- health and views --------------------------------------------------

    def health_problem(self) -> str | None:
        """None when the double reports healthy, else one line saying why not."""
        req = urllib.request.Request(f"http://{self.address}/healthz")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                json.loads(resp.read())
                return None
        except urllib.error.HTTPError as err:
            try:
                return str(json.loads(err.read()).get("error", err.reason))
            except json.JSONDecodeError:
                return f"health check answered HTTP {err.code}"
        except (urllib.error.URLError, OSError) as err:
            return f"not answering on {self.address}: {getattr(err, 'reason', err)}"

    def clusters(self) -> dict[str, dict[str, Any]]:
        """Every namespace the double serves: address, state (running/failed), error."""
        return dict(self._call("GET", "/v1/clusters"))

    def stores(self, namespace: str) -> Stores:
        """HAKeeper's cluster details for the namespace, read now."""
        raw = self._call("GET", f"/v1/namespaces/{namespace}/stores")
        return Stores(
            namespace=raw["namespace"],
            address=raw["address"],
            hakeeper_state=raw["hakeeperState"],
            cn=tuple(
                CNStore(
                    uuid=s["uuid"],
                    pod=s.get("pod", ""),
                    work_state=s["workState"],
                    state=s["state"],
                    labels={k: list(v) for k, v in (s.get("labels") or {}).items()},
                    query_address=s.get("queryAddress", ""),
                    sql_address=s.get("sqlAddress", ""),
                    lock_service_address=s.get("lockServiceAddress", ""),
                    pipeline_service_address=s.get("pipelineServiceAddress", ""),
                )
                for s in raw["cnStores"]
            ),
            tn=tuple(
                TNStore(
                    uuid=t["uuid"],
                    pod=t.get("pod", ""),
                    state=t["state"],
                    lock_service_address=t["lockServiceAddress"],
                )
                for t in raw["tnStores"]
            ),
        )

    def pod(self, namespace: str, pod: str) -> dict[str, Any]:
        """Everything the double holds for one CN pod (uuid, addresses, knobs)."""
        return dict(self._call("GET", f"/v1/namespaces/{namespace}/pods/{pod}"))

    # -- knobs -------------------------------------------------------------

    def _knob(self, namespace: str, pod: str, knob: str, body: dict[str, Any] | None) -> Any:
        method = "GET" if body is None else "PUT"
        return self._call(method, f"/v1/namespaces/{namespace}/pods/{pod}/{knob}", body)[knob]

    def sessions(self, namespace: str, pod: str) -> Sessions:
        """The sessions the CN reports."""
        return _sessions(self._knob(namespace, pod, "sessions", None))

    def set_sessions(
        self,
        namespace: str,
        pod: str,
        count: int,
        *,
        account: str | None = None,
        from_proxy: bool | None = None,
    ) -> Sessions:
        """Make the CN report ``count`` open sessions (from the MO proxy unless told)."""
        body: dict[str, Any] = {"count": count}
        if account is not None:
            body["account"] = account
        if from_proxy is not None:
            body["fromProxy"] = from_proxy
        return _sessions(self._knob(namespace, pod, "sessions", body))

    def replicas(self, namespace: str, pod: str) -> int:
        """The sharding replica count the CN reports (GetReplicaCount)."""
        return int(self._knob(namespace, pod, "replicas", None))

    def set_replicas(self, namespace: str, pod: str, count: int) -> int:
        """Make the CN report ``count`` sharding replicas."""
        return int(self._knob(namespace, pod, "replicas", {"count": count}))

    def pipelines(self, namespace: str, pod: str) -> int:
        """The running pipeline count the CN reports (GetPipelineInfo)."""
        return int(self._knob(namespace, pod, "pipelines", None))

    def set_pipelines(self, namespace: str, pod: str, count: int) -> int:
        """Make the CN report ``count`` running pipelines."""
        return int(self._knob(namespace, pod, "pipelines", {"count": count}))

    def lock(self, namespace: str, pod: str) -> LockState:
        """The TN lock-service state of a CN."""
        return _lock(self._knob(namespace, pod, "lock", None))

    def set_lock(
        self,
        namespace: str,
        pod: str,
        *,
        bound: bool | None = None,
        remain_txns: int | None = None,
    ) -> LockState:
        """Set whether the CN holds lock tables and how many transactions remain.

        A bound CN can restart only after SetRestartService and once no transaction
        remains; an unbound one at once.
        """
        body: dict[str, Any] = {}
        if bound is not None:
            body["bound"] = bound
        if remain_txns is not None:
            body["remainTxns"] = remain_txns
        return _lock(self._knob(namespace, pod, "lock", body))

    # -- faults ------------------------------------------------------------

    def set_fault(
        self, namespace: str, component: str, *, down: bool, how: str = "refuse"
    ) -> ComponentFault:
        """Make ``component`` of the namespace's MatrixOne unreachable to the operator
        (``down``; ``how`` refuse or hang), or reachable again. Refused (404) when nothing
        runs there to take down; an up always succeeds."""
        body: dict[str, Any] = {"mode": "down", "how": how} if down else {"mode": "up"}
        raw = self._call("PUT", f"/v1/namespaces/{namespace}/faults/{component}", body)
        return _fault(raw["fault"])

    def faults(self, namespace: str) -> list[ComponentFault]:
        """The faults standing in the namespace's MatrixOne."""
        raw = self._call("GET", f"/v1/namespaces/{namespace}/faults")
        return [_fault(f) for f in raw["faults"]]


def _fault(raw: dict[str, Any]) -> ComponentFault:
    return ComponentFault(
        component=raw["component"], how=raw.get("how", ""),
        addresses=tuple(raw.get("addresses") or ()),
    )  # fmt: skip


def _sessions(raw: dict[str, Any]) -> Sessions:
    return Sessions(
        count=int(raw["count"]), account=raw["account"], from_proxy=bool(raw["fromProxy"])
    )


def _lock(raw: dict[str, Any]) -> LockState:
    return LockState(
        bound=bool(raw["bound"]), remain_txns=int(raw["remainTxns"]), status=raw["status"]
    )
