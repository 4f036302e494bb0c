"""Wiring: the caches, the four controllers and the watches that feed their queues.

Each watch maps events to reconcile requests with the operator's own predicates; see
:class:`Model` for which watch feeds which controller.
"""

from __future__ import annotations

import threading
import time
from functools import partial
from pathlib import Path

from mochaos.ctrl.informer import ADDED, DELETED, MODIFIED, Informer
from mochaos.ctrl.mo_components import HAKEEPER
from mochaos.ctrl.rest import CLAIMS, CLAIMSETS, PODS, POOLS, Kind, Kube, Obj
from mochaos.model import claim, claimset, pool, store
from mochaos.model.dict_helpers import annotations_of, labels_of
from mochaos.model.event_recorder import EventRecorder
from mochaos.model.hakeeper import HAKeeper, StoreCache, container_started, store_uuid
from mochaos.model.logs import Logger
from mochaos.model.matrixone_faults import Faults
from mochaos.model.profiles import Profile
from mochaos.model.runtime.context import Client
from mochaos.model.runtime.reconciler import Reconciler
from mochaos.model.timing import Timing

STORE_WORKERS = 4
SYNC_TIMEOUT = 30.0


def _both(old: Obj | None, new: Obj | None) -> list[Obj]:
    return [o for o in (old, new) if o is not None]


def _rv(obj: Obj | None) -> str | None:
    return None if obj is None else obj.get("metadata", {}).get("resourceVersion")


def default_predicate(event: str, old: Obj | None, new: Obj | None) -> bool:
    """The runtime's default primary predicate: generation, labels or annotations changed."""
    if event != MODIFIED or old is None or new is None:
        return True
    return (
        old["metadata"].get("generation") != new["metadata"].get("generation")
        or labels_of(old) != labels_of(new)
        or annotations_of(old) != annotations_of(new)
    )


def controller_owner(obj: Obj, kind: Kind) -> str | None:
    """The name of the object's controller when it is of ``kind``."""
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        group = ref.get("apiVersion", "").split("/")[0]
        if ref.get("controller") and ref.get("kind") == kind.kind and group == kind.group:
            return ref.get("name")
    return None


class Model:
    """The whole model operator in one namespace.

    The claim controller re-enqueues a claim on any resourceVersion change (its own status
    writes included) and follows pods through :func:`claim.claims_for_pod`; the claimset
    controller follows its own generation/label/annotation changes and every change of a
    claim it controls; the pool follows all its pods and the claims nominated to it;
    cnstore follows CN pods through :func:`store.wants_pod_event`. Update events map both
    the old and the new object, like controller-runtime's ``EnqueueRequestsFromMapFunc``.
    """

    def __init__(
        self,
        *,
        kube: Kube,
        namespace: str,
        profile: Profile,
        timing: Timing,
        log: Logger,
        max_idle: int | None,
        matrixone_faults: Path | None = None,
        pod_image: str | None = None,
    ) -> None:
        """``matrixone_faults``: the file a scenario takes the model's MatrixOne down in
        (:mod:`mochaos.model.matrixone_faults`; None: it never is). ``pod_image``: the
        pool's pods run on real nodes with it (None: on kwok's fake nodes)."""
        self.profile = profile
        self.log = log
        self.stop_event = threading.Event()
        self.caches = {
            kind: Informer(kube, kind, namespace, stop=self.stop_event, on_error=self._cache_error)
            for kind in (PODS, CLAIMS, CLAIMSETS, POOLS)
        }
        client = Client(kube, namespace, self.caches)
        self.events = EventRecorder(kube, log=log)
        self.matrixone = Faults(matrixone_faults, hang=timing.hakeeper_discovery)
        hakeeper = HAKeeper(
            StoreCache(
                stores=self._running_stores, refresh=timing.store_cache_refresh,
                stop=self.stop_event, reach=partial(self.matrixone.call, HAKEEPER),
            ),
            self.matrixone,
        )  # fmt: skip
        common = {"client": client, "timing": timing, "log": log, "events": self.events}
        self.claims = Reconciler(
            name=claim.NAME,
            kind=CLAIMS,
            cache=self.caches[CLAIMS],
            actor=claim.ClaimActor(profile=profile, timing=timing, hakeeper=hakeeper),
            **common,
        )
        self.claimsets = Reconciler(
            name=claimset.NAME,
            kind=CLAIMSETS,
            cache=self.caches[CLAIMSETS],
            actor=claimset.ClaimSetActor(profile=profile, timing=timing),
            **common,
        )
        self.pools = Reconciler(
            name=pool.NAME,
            kind=POOLS,
            cache=self.caches[POOLS],
            actor=pool.PoolActor(timing=timing, max_idle=max_idle, pod_image=pod_image),
            **common,
        )
        self.stores = Reconciler(
            name=store.NAME,
            kind=PODS,
            cache=self.caches[PODS],
            actor=store.StoreActor(timing=timing, hakeeper=hakeeper),
            workers=STORE_WORKERS,
            finalizer=False,
            finalize_deleting=True,
            status_sync=False,
            **common,
        )
        self.caches[CLAIMS].add_handler(self._on_claim)
        self.caches[PODS].add_handler(self._on_pod)
        self.caches[CLAIMSETS].add_handler(self._on_primary(self.claimsets))
        self.caches[POOLS].add_handler(self._on_primary(self.pools))

    def start(self, *, abort: threading.Event) -> bool:
        """Start caches, wait for them to sync, start the workers. False when the caches do
        not sync within SYNC_TIMEOUT or ``abort`` is set meanwhile.
        """
        for kind, cache in self.caches.items():
            threading.Thread(target=cache.run, name=f"watch-{kind.plural}", daemon=True).start()
        threading.Thread(
            target=self.events.run, args=(self.stop_event,), name="events", daemon=True
        ).start()
        deadline = time.monotonic() + SYNC_TIMEOUT
        while not all(cache.synced.is_set() for cache in self.caches.values()):
            if abort.wait(0.05) or time.monotonic() > deadline:
                return False
        for reconciler in (self.claims, self.claimsets, self.pools, self.stores):
            reconciler.start()
        return True

    def stop(self) -> None:
        """Stop workers and watches."""
        self.stop_event.set()
        for reconciler in (self.claims, self.claimsets, self.pools, self.stores):
            reconciler.stop()

    def _running_stores(self) -> list[str]:
        """HAKeeper's CN stores: one per CN pod whose main container runs."""
        running = self.caches[PODS].list(
            labels={store.COMPONENT: "CNSet"}, where=lambda p: container_started(p) is not None
        )
        return [store_uuid(p) for p in running]

    def _cache_error(self, message: str) -> None:
        self.log.error("watch error", caller="cache/reflector.go:158", error=message)

    def _on_claim(self, event: str, old: Obj | None, new: Obj | None) -> None:
        if event in (ADDED, DELETED) or _rv(old) != _rv(new):
            for obj in _both(old, new):
                self.claims.enqueue(obj["metadata"]["name"])
                owner = controller_owner(obj, CLAIMSETS)
                if owner:
                    self.claimsets.enqueue(owner)
        for obj in _both(old, new):
            pool_name = obj.get("spec", {}).get("poolName")
            if pool_name:
                self.pools.enqueue(pool_name)

    def _on_pod(self, event: str, old: Obj | None, new: Obj | None) -> None:
        lister = self.caches[CLAIMS].list if self.profile.pod_map_by_podname else None
        for name in claim.claims_for_pod(event, old, new, claims=lister):
            self.claims.enqueue(name)
        for obj in _both(old, new):
            pool_name = labels_of(obj).get(pool.POOL_NAME)
            if pool_name is not None:
                self.pools.enqueue(pool_name)
        if store.wants_pod_event(event, old, new):
            self.stores.enqueue((new or old)["metadata"]["name"])

    @staticmethod
    def _on_primary(reconciler: Reconciler):
        def handler(event: str, old: Obj | None, new: Obj | None) -> None:
            if default_predicate(event, old, new):
                reconciler.enqueue((new or old)["metadata"]["name"])

        return handler
