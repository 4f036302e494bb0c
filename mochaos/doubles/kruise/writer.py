"""Every write the double makes: one call, its answer written through to the cache, one log
line naming the object and what changed.

Writes follow what kruise's controllers send: pods are created and deleted without
preconditions, lifecycle labels go in strategic merge patches (kruise's
``UpdatePodLifecycle``), pod conditions and workload status are full updates carrying the
resourceVersion, so a stale copy gets a Conflict (kruise retries those on a fresh read).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_fixed

from mochaos.doubles.kruise.api import PODS, Api, Conflict, Obj, Resource
from mochaos.doubles.kruise.cache import Cache
from mochaos.doubles.kruise.logs import Log
from mochaos.doubles.kruise.objects import meta, name_of, namespace_of, now_rfc3339

# client-go's retry.DefaultBackoff: 4 attempts, 10 ms apart (the jitter and factor omitted).
retry_on_conflict = retry(
    retry=retry_if_exception_type(Conflict),
    stop=stop_after_attempt(4),
    wait=wait_fixed(0.01),
    reraise=True,
)


class Writer:
    """Writes of one reconcile pass, logged against the workload being reconciled."""

    def __init__(self, api: Api, caches: dict[Resource, Cache], log: Log) -> None:
        self.api = api
        self._caches = caches
        self.log = log

    def _store(self, res: Resource, obj: Obj) -> Obj:
        if obj.get("kind") == res.kind and res in self._caches:
            self._caches[res].store(obj)
        return obj

    def create(self, res: Resource, obj: Obj, *, msg: str, **fields: object) -> Obj:
        """Create ``obj``."""
        created = self.api.create(res, obj)
        self.log.info(msg, action="create", kind=res.kind, object=name_of(created), **fields)
        return self._store(res, created)

    def delete(self, res: Resource, obj: Obj, *, msg: str, **fields: object) -> None:
        """Delete ``obj`` (no precondition, like kruise); a pod is marked deleting in the
        cache at once so the next pass does not count it as active."""
        answer = self.api.delete(res, namespace_of(obj) or None, name_of(obj))
        self.log.info(msg, action="delete", kind=res.kind, object=name_of(obj), **fields)
        if res == PODS:
            gone = answer if answer.get("kind") == "Pod" else copy.deepcopy(obj)
            meta(gone).setdefault("deletionTimestamp", now_rfc3339())
            self._caches[PODS].store(gone)

    def patch(
        self, res: Resource, obj: Obj, patch: Obj, *, msg: str, strategic: bool, **fields: object
    ) -> Obj:
        """Patch ``obj`` (no resourceVersion: the patch itself says what to change)."""
        answer = self.api.patch(
            res, namespace_of(obj) or None, name_of(obj), patch, strategic=strategic
        )
        self.log.info(
            msg, action="patch", kind=res.kind, object=name_of(obj), patch=patch, **fields
        )
        return self._store(res, answer)

    def update(self, res: Resource, obj: Obj, *, msg: str, sub: str = "", **fields: object) -> Obj:
        """Full update of ``obj`` (or its ``status``) with its resourceVersion."""
        answer = self.api.update(res, obj, sub=sub)
        action = f"update {sub}" if sub else "update"
        self.log.info(msg, action=action, kind=res.kind, object=name_of(obj), **fields)
        return self._store(res, answer)

    def update_fresh(
        self,
        res: Resource,
        obj: Obj,
        mutate: Callable[[Obj], bool],
        *,
        msg: str,
        sub: str = "",
        **fields: object,
    ) -> Obj | None:
        """Read ``obj`` from the apiserver, apply ``mutate`` (False: nothing to write) and
        update it; a Conflict reads again and retries, like ``retry.RetryOnConflict``."""

        @retry_on_conflict
        def attempt() -> Obj | None:
            current = self.api.get(res, namespace_of(obj) or None, name_of(obj))
            if not mutate(current):
                return None
            return self.update(res, current, msg=msg, sub=sub, **fields)

        return attempt()
