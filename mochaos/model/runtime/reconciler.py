"""The reconcile loop of the operator's controller-runtime fork.

docs/operator-behaviour.md §1.1-§1.3.

See :meth:`Reconciler.reconcile` for one pass and how its outcome requeues the object.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mochaos.ctrl.informer import Informer
from mochaos.ctrl.rest import ApiError, Conflict, Kind, Obj
from mochaos.ctrl.workqueue import RateLimiter, WorkQueue
from mochaos.model.dict_helpers import deleting, meta
from mochaos.model.event_recorder import NORMAL, WARNING, EventRecorder
from mochaos.model.logs import Logger
from mochaos.model.runtime.context import Client, Context, ReSync, find_cause
from mochaos.model.timing import Timing

Action = Callable[[Context], None]

RT = "reconciler/reconciler.go"


class Actor(Protocol):
    """The operator-specific half of a controller."""

    def observe(self, ctx: Context) -> Action | None:
        """Decide what to do; None means synced. May raise."""
        ...

    def finalize(self, ctx: Context) -> bool:
        """Clean up a deleting object; True when done. May raise."""
        ...


@dataclass(frozen=True, slots=True)
class Result:
    """How the queue treats the item after a pass."""

    requeue: bool = False
    after: float = 0.0


FORGET = Result()
BACKOFF = Result(requeue=True)


def error_stack(err: BaseException) -> str:
    """The error's text and stack, as the runtime logs go-errors errors (as ``msg``)."""
    return f"{type(err).__name__} {err}\n" + "".join(traceback.format_tb(err.__traceback__))


class Reconciler:
    """One controller: a queue, its workers and the reconcile pass (module docstring)."""

    def __init__(
        self,
        *,
        name: str,
        kind: Kind,
        cache: Informer,
        actor: Actor,
        client: Client,
        timing: Timing,
        log: Logger,
        events: EventRecorder,
        workers: int = 1,
        finalizer: bool = True,
        finalize_deleting: bool = False,
        status_sync: bool = True,
    ) -> None:
        """``finalizer`` False: the runtime puts no finalizer of its own on the objects; with
        ``finalize_deleting`` their deletion still reaches the actor's ``finalize`` (the
        model's stand-in for a finalizer it leaves out, the store controller's ``cnstore``),
        retried until it says done."""
        self.name = name
        self.kind = kind
        self._cache = cache
        self._actor = actor
        self._client = client
        self._timing = timing
        self._log = log.with_values(controller=name)
        self._events = events
        self._workers = workers
        self._finalizer = f"matrixorigin.io/{name}" if finalizer else None
        self._finalize_deleting = finalize_deleting
        self._status_sync = status_sync
        self._retry = Result(requeue=True, after=timing.default_requeue)
        self.queue = WorkQueue(
            limiter=RateLimiter(
                base=timing.backoff_base, cap=timing.backoff_cap, qps=10 / timing.scale
            )
        )

    def enqueue(self, name: str) -> None:
        """Ask for a pass over the object ``name``."""
        self.queue.add(name)

    def start(self) -> list[threading.Thread]:
        """Start the workers (daemon threads)."""
        threads = []
        for i in range(self._workers):
            t = threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
            t.start()
            threads.append(t)
        return threads

    def stop(self) -> None:
        """Stop handing out work; workers exit after their current pass."""
        self.queue.shutdown()

    def _work(self) -> None:
        while (item := self.queue.get()) is not None:
            try:
                result = self.reconcile(item)
            except Exception as err:
                self._log.error(
                    error_stack(err),
                    caller=RT,
                    error=str(err),
                    namespace=self._client.namespace,
                    name=item,
                )
                result = BACKOFF
            if result.after > 0:
                self.queue.forget(item)
                self.queue.add_after(item, result.after)
            elif result.requeue:
                self.queue.add_rate_limited(item)
            else:
                self.queue.forget(item)
            self.queue.done(item)

    def reconcile(self, name: str) -> Result:
        """One pass over the object ``name`` (rt/reconciler.go:187-275).

        Read the object from the cache; if it is deleting, finalize; otherwise ensure the
        finalizer (full update), ``observe``, write the in-memory status, run the action.
        Results: forget (wait for the next watch event), retry (2 s), backoff (per-item
        exponential) or a ReSync delay. Actor errors write status first, then a ReSync
        requeues silently, a Conflict retries in 2 s, anything else emits
        ``ReconcileFail`` and backs off. Unexpected Python errors (the model's stand-ins
        for the operator's panics, quirk Q1) are logged at error level and backed off.
        """
        log = self._log.with_values(namespace=self._client.namespace, name=name)
        obj = self._cache.get(name)
        if obj is None:
            return FORGET
        ctx = Context(obj=obj, kind=self.kind, client=self._client, log=log, emit=self._emit)
        if deleting(obj):
            return self._finalize(ctx)
        if self._finalizer and self._finalizer not in (meta(obj).get("finalizers") or []):
            meta(obj).setdefault("finalizers", []).append(self._finalizer)
            try:
                self._client.update(self.kind, obj)
            except Conflict:
                return self._retry
            except (ApiError, OSError) as err:
                return self._failed(log, err)
        try:
            action = self._actor.observe(ctx)
        except Exception as err:
            return self._actor_error(ctx, err)
        if action is None:
            log.info(
                "object is synced, reconcile will be triggered on next change or resync",
                caller=f"{RT}:242",
            )
            ctx.event(NORMAL, "ReconcileSuccess", "object is synced")
            return self._write_status(ctx) or FORGET
        failed = self._write_status(ctx)
        if failed is not None:
            return failed
        try:
            action(ctx)
        except Exception as err:
            return self._actor_error(ctx, err)
        return self._retry

    def _emit(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self._events.emit(
            obj, self.kind, component=self.name, type_=type_, reason=reason, message=message
        )

    def _write_status(self, ctx: Context) -> Result | None:
        if not self._status_sync:
            return None
        try:
            self._client.update_status(self.kind, ctx.obj)
        except Conflict:
            return self._retry
        except (ApiError, OSError) as err:
            return self._failed(ctx.log, err)
        return None

    def _failed(self, log: Logger, err: BaseException) -> Result:
        log.error("Reconciler error", caller="controller/controller.go:329", error=str(err))
        return BACKOFF

    def _actor_error(self, ctx: Context, err: BaseException) -> Result:
        """processActorError (rt/reconciler.go:284-329)."""
        if self._status_sync:
            try:
                self._client.update_status(self.kind, ctx.obj)
            except (ApiError, OSError):
                return self._retry
        resync = find_cause(err, ReSync)
        if resync is not None:
            return Result(requeue=True, after=resync.after)
        if find_cause(err, Conflict) is not None:
            return self._retry
        ctx.event(WARNING, "ReconcileFail", f"failed calling actions, error: {err}")
        ctx.log.error(error_stack(err), caller=f"{RT}:325", error=str(err))
        return BACKOFF

    def _finalize(self, ctx: Context) -> Result:
        """finalize (rt/reconciler.go:345-377)."""
        finalizers = meta(ctx.obj).get("finalizers") or []
        if self._finalizer is None:
            if not self._finalize_deleting:
                return FORGET
        elif self._finalizer not in finalizers:
            return FORGET
        try:
            done = self._actor.finalize(ctx)
        except Exception as err:
            ctx.event(WARNING, "FinalizeFail", f"failed to finalize object, error: {err}")
            ctx.log.error(error_stack(err), caller=f"{RT}:361", error=str(err))
            return BACKOFF
        if not done:
            ctx.log.info("does not complete finalizing, retry", caller=f"{RT}:367")
            return self._retry
        if self._finalizer is None:
            return FORGET
        ctx.log.info("resource finalizing complete, remove finalizer", caller=f"{RT}:370")
        remaining = [f for f in meta(ctx.obj).get("finalizers") or [] if f != self._finalizer]
        meta(ctx.obj)["finalizers"] = remaining
        try:
            self._client.update(self.kind, ctx.obj)
        except (ApiError, OSError) as err:
            ctx.event(WARNING, "FinalizeFail", f"failed to remove finalizer, error: {err}")
            return self._retry
        return FORGET
