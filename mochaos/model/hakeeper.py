"""HAKeeper and the CN query service as the model plays them: calls that succeed at once,
unless a scenario took HAKeeper down (:mod:`.matrixone_faults`).

A store is in HAKeeper once its pod's main container runs; the operator sees HAKeeper's
stores through its store cache (:class:`StoreCache`); the query service of a pod is its
``matrixorigin.io/score`` annotation, so a test sets sessions there
(docs/operator-behaviour.md §4.10, §7).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from mochaos.ctrl.mo_components import HAKEEPER
from mochaos.ctrl.objects import SCORE_ANNOTATION
from mochaos.ctrl.rest import Obj
from mochaos.model.dict_helpers import annotations_of
from mochaos.model.matrixone_faults import Faults, Unreachable

WORKING = 1
DRAINING = 2
MAIN_CONTAINER = "main"


@dataclass(frozen=True, slots=True)
class Store:
    """A CN store as HAKeeper's store cache describes it."""

    uuid: str
    address: str
    work_state: int
    labels: dict[str, list[str]] = field(default_factory=dict)


@dataclass(slots=True)
class Score:
    """The ``matrixorigin.io/score`` annotation (common/cnstore.go StoreScore)."""

    sessions: int = 0
    pipelines: int = 0
    replicas: int = 0
    started: str | None = None

    def safe_to_reclaim(self) -> bool:
        """No sessions, pipelines or sharding replicas left."""
        return self.sessions == 0 and self.pipelines == 0 and self.replicas == 0

    def to_annotation(self) -> str:
        """JSON in the operator's field order; ``startedTime`` omitted when unknown."""
        data: dict[str, object] = {
            "sessionCount": self.sessions,
            "pipelineCount": self.pipelines,
            "replicaCount": self.replicas,
        }
        if self.started is not None:
            data["startedTime"] = self.started
        return json.dumps(data, separators=(",", ":"))


class MissingScore(Exception):
    """The pod has no score annotation."""


def read_score(pod: Obj) -> Score:
    """Parse the score annotation: JSON, a legacy bare integer, or empty (all zero)."""
    meta = pod.get("metadata", {})
    raw = annotations_of(pod).get(SCORE_ANNOTATION)
    if raw is None:
        raise MissingScore(
            f"cannot find connection count for CN pod {meta.get('namespace')}/{meta.get('name')}, "
            "connection annotation is empty"
        )
    if raw == "":
        return Score()
    try:
        data = json.loads(raw)
    except ValueError:
        return Score(sessions=int(raw))
    if isinstance(data, int):
        return Score(sessions=data)
    return Score(
        sessions=int(data.get("sessionCount", 0)),
        pipelines=int(data.get("pipelineCount", 0)),
        replicas=int(data.get("replicaCount", 0)),
        started=data.get("startedTime"),
    )


def container_started(pod: Obj) -> str | None:
    """When the main container started running, or None when it does not run."""
    for status in pod.get("status", {}).get("containerStatuses") or []:
        if status.get("name") == MAIN_CONTAINER:
            running = (status.get("state") or {}).get("running")
            if running:
                return running.get("startedAt")
    return None


def store_uuid(pod: Obj) -> str:
    """The CN store UUID of a pod, derived as the operator does (GetCNPodUUID): sha256 of
    ``<pod>.<subdomain>.<ns>.svc\\n``, hex, the first 16 hex characters read as eight
    little-endian 16-bit words.
    """
    meta = pod.get("metadata", {})
    subdomain = pod.get("spec", {}).get("subdomain", "")
    address = f"{meta.get('name')}.{subdomain}.{meta.get('namespace')}.svc\n"
    hex_text = hashlib.sha256(address.encode()).hexdigest().encode()
    words = [hex_text[i] | hex_text[i + 1] << 8 for i in range(0, 16, 2)]
    return "{:x}{:x}-{:x}-{:x}-{:x}-{:x}{:x}{:x}".format(*words)


class StoreCache:
    """The operator's copy of HAKeeper's CN stores (mocli/cn_cache.go at 2301e3b).

    Built on first use — the operator creates a LogSet's client set, and with it this
    cache, at the first ``GetClient`` (mocli/manager.go:77-93) — and filled at once
    (``NewCNCache`` → ``doRefresh``, cn_cache.go:46-52), then refilled every ``refresh``
    wall seconds (cn_cache.go:72-80). A store registered between two fills is not seen
    until the next one. While HAKeeper is down (``reach`` raises Unreachable) the cache
    cannot be built — the operator's client set is not made (``mocli/manager.go:141-150``)
    — and a fill keeps what the cache held (``doRefresh`` logs and returns, cn_cache.go:
    87-95).
    """

    def __init__(
        self,
        *,
        stores: Callable[[], Iterable[str]],
        refresh: float,
        stop: threading.Event,
        reach: Callable[[], None] = lambda: None,
    ) -> None:
        self._stores = stores
        self._refresh = refresh
        self._stop = stop
        self._reach = reach
        self._lock = threading.Lock()
        self._cached: set[str] | None = None

    def has(self, uuid: str) -> bool:
        """``GetCN``: whether the store is in the cache (built now on first use; Unreachable
        while HAKeeper is down and it was never built)."""
        with self._lock:
            if self._cached is None:
                self._reach()
                self._cached = set(self._stores())
                threading.Thread(target=self._run, name="store-cache", daemon=True).start()
            return uuid in self._cached

    def _run(self) -> None:
        while not self._stop.wait(self._refresh):
            try:
                self._reach()
            except Unreachable:
                continue
            stores = set(self._stores())
            with self._lock:
                self._cached = stores


class HAKeeper:
    """No-op HAKeeper: every call succeeds unless a scenario took it down (``faults``: then
    Unreachable, as the operator's client fails); its CN stores are the running CN pods."""

    def __init__(self, cache: StoreCache, faults: Faults | None = None) -> None:
        self.cache = cache
        self.faults = faults

    def reach(self) -> None:
        """One call to HAKeeper: return when it is up, Unreachable when it is down."""
        if self.faults is not None:
            self.faults.call(HAKEEPER)

    def registered(self, pod: Obj) -> bool:
        """Whether the pod's store is in the operator's store cache."""
        return self.cache.has(store_uuid(pod))

    def patch_store(self, pod: Obj, *, state: int, labels: dict[str, list[str]] | None) -> Store:
        """PatchCNStore (+ UpdateCNLabel when ``labels`` is None); the cached store after it."""
        self.reach()
        ip = pod.get("status", {}).get("podIP", "")
        return Store(uuid=store_uuid(pod), address=ip, work_state=state, labels=labels or {})

    def delete_store(self, uuid: str) -> None:
        """DeleteCNStore."""
        self.reach()
