"""The double's control loop: cluster-wide caches, one work queue, a few workers.

Keys are ``(kind, namespace, name)``. A CloneSet or StatefulSet event queues that workload;
a pod event queues the workload named by its controller reference (an orphan pod queues the
namespace's StatefulSets whose selector matches it, which may adopt it) and, for a pod a
kruise workload controls, the kubelet's Ready stand-in (:func:`readiness.sync_ready`); a PVC
event queues the volume binder for that PVC. A pass that fails is retried with client-go's per-item
exponential backoff; a pass that asks for a later look (minReadySeconds) is queued after
that delay; nothing is polled.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from mochaos.ctrl.workqueue import RateLimiter, WorkQueue
from mochaos.doubles.kruise import readiness, volumes
from mochaos.doubles.kruise.api import (
    CLONESETS,
    KRUISE_GROUP,
    PODS,
    PVCS,
    PVS,
    STATEFULSETS,
    Api,
    ApiError,
    Obj,
    Resource,
)
from mochaos.doubles.kruise.cache import Cache
from mochaos.doubles.kruise.cloneset import CONTROLLER as CLONESET_CONTROLLER
from mochaos.doubles.kruise.cloneset import CloneSetSync
from mochaos.doubles.kruise.events import EventRecorder
from mochaos.doubles.kruise.logs import Log
from mochaos.doubles.kruise.objects import (
    controller_of,
    deleting,
    labels_of,
    name_of,
    namespace_of,
    selector_matches,
)
from mochaos.doubles.kruise.revisions import REVISIONS
from mochaos.doubles.kruise.statefulset import CONTROLLER as STATEFULSET_CONTROLLER
from mochaos.doubles.kruise.statefulset import StatefulSetSync
from mochaos.doubles.kruise.workload import Pass
from mochaos.doubles.kruise.writer import Writer

Key = tuple[str, str, str]

BACKOFF_BASE = 0.005
BACKOFF_CAP = 60.0
SYNC_TIMEOUT = 60.0


@dataclass(frozen=True)
class Options:
    """What the double runs."""

    workers: int = 2
    bind_volumes: bool = True


class Controller:
    """The kruise double (module docstring)."""

    def __init__(self, api: Api, log: Log, options: Options = Options()) -> None:
        self.api = api
        self.log = log
        self.options = options
        self.stop_event = threading.Event()
        self.errors = 0
        self.caches: dict[Resource, Cache] = {
            res: Cache(api, res, on_error=self._cache_error)
            for res in (CLONESETS, STATEFULSETS, PODS, PVCS, REVISIONS)
        }
        if options.bind_volumes:
            self.caches[PVS] = Cache(api, PVS, on_error=self._cache_error)
        self.queue = WorkQueue(limiter=RateLimiter(base=BACKOFF_BASE, cap=BACKOFF_CAP))
        self._warned: set[str] = set()
        self._threads: list[threading.Thread] = []
        self.caches[CLONESETS].add_handler(self._on_workload(CLONESETS))
        self.caches[STATEFULSETS].add_handler(self._on_workload(STATEFULSETS))
        self.caches[PODS].add_handler(self._on_pod)
        self.caches[PVCS].add_handler(self._on_pvc)
        self._recorders = {
            CLONESETS.kind: EventRecorder(api, CLONESET_CONTROLLER, log),
            STATEFULSETS.kind: EventRecorder(api, STATEFULSET_CONTROLLER, log),
        }

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the caches, wait for their first list, then start the workers."""
        for res, cache in self.caches.items():
            t = threading.Thread(
                target=cache.run, args=(self.stop_event,), name=f"watch-{res.plural}", daemon=True
            )
            t.start()
            self._threads.append(t)
        for res, cache in self.caches.items():
            if not cache.synced.wait(SYNC_TIMEOUT):
                raise ApiError(0, "Timeout", f"{res.plural} not listed within {SYNC_TIMEOUT}s")
        for i in range(self.options.workers):
            t = threading.Thread(target=self._work, name=f"worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        self.log.info("started", workers=self.options.workers, volumes=self.options.bind_volumes)

    @property
    def synced(self) -> bool:
        """Every cache has listed at least once."""
        return all(c.synced.is_set() for c in self.caches.values())

    def stop(self) -> None:
        """Stop the workers and watches."""
        self.stop_event.set()
        self.queue.shutdown()
        self.api.close()
        for t in self._threads:
            t.join(timeout=5)

    # -- event handlers -----------------------------------------------------------------------

    def _cache_error(self, message: str) -> None:
        self.errors += 1
        self.log.error("cache error", error=message)

    def _on_workload(self, res: Resource) -> Callable[[str, Obj | None, Obj | None], None]:
        def handler(event: str, old: Obj | None, new: Obj | None) -> None:
            obj = new or old
            if obj is not None:
                self.queue.add((res.kind, namespace_of(obj), name_of(obj)))

        return handler

    def _on_pod(self, event: str, old: Obj | None, new: Obj | None) -> None:
        for pod in (old, new):
            if pod is None:
                continue
            ref = controller_of(pod)
            if ref is None:
                if new is not None and pod is new:
                    self._enqueue_adopters(pod)
                continue
            if ref.get("apiVersion", "").split("/")[0] != KRUISE_GROUP:
                continue
            if ref.get("kind") in (CLONESETS.kind, STATEFULSETS.kind):
                self.queue.add((ref["kind"], namespace_of(pod), ref.get("name", "")))
                if pod is new:
                    self.queue.add((PODS.kind, namespace_of(pod), name_of(pod)))

    def _enqueue_adopters(self, pod: Obj) -> None:
        labels = labels_of(pod)
        for sts in self.caches[STATEFULSETS].list(namespace_of(pod)):
            if selector_matches((sts.get("spec") or {}).get("selector"), labels):
                self.queue.add((STATEFULSETS.kind, namespace_of(sts), name_of(sts)))

    def _on_pvc(self, event: str, old: Obj | None, new: Obj | None) -> None:
        if self.options.bind_volumes and new is not None:
            self.queue.add((PVCS.kind, namespace_of(new), name_of(new)))

    # -- workers ------------------------------------------------------------------------------

    def _work(self) -> None:
        while (key := self.queue.get()) is not None:
            try:
                after = self.reconcile(key)
            except Exception as err:  # report, back off, keep serving the other keys
                self.errors += 1
                kind, ns, name = key
                self.log.error(
                    "reconcile failed", kind=kind, namespace=ns, name=name, error=repr(err)
                )
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
                if after is not None:
                    self.queue.add_after(key, after)
            finally:
                self.queue.done(key)

    def _pass(self, kind: str, ns: str, name: str, controller: str) -> Pass:
        writer = Writer(
            self.api,
            self.caches,
            self.log.with_values(controller=controller, namespace=ns, name=name),
        )
        return Pass(
            writer=writer,
            pods=self.caches[PODS],
            pvcs=self.caches[PVCS],
            revisions=self.caches[REVISIONS],
            events=self._recorders[kind],
            warned=self._warned,
        )

    def reconcile(self, key: Key) -> float | None:
        """One pass over ``key``; the delay before the next look, if one is needed."""
        kind, ns, name = key
        if kind == CLONESETS.kind:
            cs = self.caches[CLONESETS].get(ns, name)
            if cs is None:
                return None
            p = self._pass(kind, ns, name, CLONESET_CONTROLLER)
            CloneSetSync(p, cs).run()
            return p.requeue_after
        if kind == STATEFULSETS.kind:
            sts = self.caches[STATEFULSETS].get(ns, name)
            if sts is None:
                return None
            p = self._pass(kind, ns, name, STATEFULSET_CONTROLLER)
            StatefulSetSync(p, sts).run()
            return p.requeue_after
        if kind == PODS.kind:
            pod = self.caches[PODS].get(ns, name)
            if pod is not None and not deleting(pod):
                writer = Writer(
                    self.api,
                    self.caches,
                    self.log.with_values(controller="pod-readiness", namespace=ns, name=name),
                )
                readiness.sync_ready(writer, pod)
            return None
        if kind == PVCS.kind:
            pvc = self.caches[PVCS].get(ns, name)
            if pvc is not None:
                writer = Writer(
                    self.api,
                    self.caches,
                    self.log.with_values(controller="volume-binder", namespace=ns, name=name),
                )
                volumes.bind(writer, pvc, self.caches[PVS].get("", volumes.volume_name(pvc)))
        return None
