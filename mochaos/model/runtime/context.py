"""What an actor sees in one reconcile pass: the object, a client, a logger, an event sink.

The client reads from the informer caches and writes with controller-runtime's semantics
(:class:`Client`); errors wrap like go-errors so :func:`find_cause` works like ``errors.As``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TypeVar

from mochaos.ctrl.informer import Informer
from mochaos.ctrl.rest import Kind, Kube, NotFound, Obj
from mochaos.model.dict_helpers import merge_diff, meta
from mochaos.model.logs import Logger
from mochaos.model.timing import go_duration

E = TypeVar("E", bound=BaseException)


class ReSync(Exception):
    """``recon.ErrReSync``: requeue after ``after`` wall seconds, silently (no event)."""

    def __init__(self, message: str, after: float = 0.0) -> None:
        self.message = message
        self.after = after
        super().__init__(f"reconcile error: {message}, retry after {go_duration(after)}")


class OperatorError(Exception):
    """An error of the operator's code (a go-errors error): reported and backed off."""


def wrap(err: BaseException, prefix: str = "") -> OperatorError:
    """``errors.WrapPrefix(err, prefix)`` (or ``errors.Wrap`` without a prefix); raise it
    ``from err`` so the cause chain is kept.
    """
    wrapped = OperatorError(f"{prefix}: {err}" if prefix else str(err))
    wrapped.__cause__ = err
    return wrapped


def find_cause(err: BaseException | None, cls: type[E]) -> E | None:
    """The first error of type ``cls`` in the cause chain of ``err`` (``errors.As``)."""
    while err is not None:
        if isinstance(err, cls):
            return err
        err = err.__cause__
    return None


class Client:
    """Cached reads (eventually consistent) and direct writes (docs/operator-behaviour.md §1.5).

    - ``update`` is a full PUT carrying the object's resourceVersion (stale → Conflict);
    - ``patch`` / ``patch_status`` send the JSON merge patch of what ``mutate`` changed,
      with the resourceVersion (optimistic lock), and send nothing when nothing changed;
    - every write decodes the server's answer into the same dict, so a spec write
      overwrites status changes not yet written — the quirk PR #592 Fix 3 runs into.
    """

    def __init__(self, kube: Kube, namespace: str, caches: dict[Kind, Informer]) -> None:
        self.kube = kube
        self.namespace = namespace
        self._caches = caches

    def get(self, kind: Kind, name: str) -> Obj:
        """The cached object; :class:`NotFound` when the cache does not have it."""
        obj = self._caches[kind].get(name)
        if obj is None:
            raise NotFound(404, "NotFound", f'{kind.plural} "{name}" not found')
        return obj

    def list(
        self,
        kind: Kind,
        *,
        labels: dict[str, str] | None = None,
        where: Callable[[Obj], bool] | None = None,
    ) -> list[Obj]:
        """Cached objects of ``kind`` matching ``labels`` and ``where``."""
        return self._caches[kind].list(labels=labels, where=where)

    def list_direct(self, kind: Kind) -> list[Obj]:
        """An uncached LIST straight from the apiserver."""
        return self.kube.list(kind, self.namespace).get("items", [])

    def create(self, kind: Kind, obj: Obj) -> None:
        """Create ``obj``; the server's answer replaces its contents."""
        _replace(obj, self.kube.create(kind, self.namespace, obj))

    def create_owned(self, kind: Kind, obj: Obj, *, owner: Obj, owner_kind: Kind) -> None:
        """Create ``obj`` with a controller ownerReference to ``owner``."""
        meta(obj)["ownerReferences"] = [controller_ref(owner, owner_kind)]
        self.create(kind, obj)

    def update(self, kind: Kind, obj: Obj) -> None:
        """Full update (PUT) with the object's resourceVersion."""
        _replace(obj, self.kube.update(kind, obj))

    def update_status(self, kind: Kind, obj: Obj) -> None:
        """Full update of the status subresource."""
        _replace(obj, self.kube.update(kind, obj, status=True))

    def patch(self, kind: Kind, obj: Obj, mutate: Callable[[], None]) -> None:
        """Merge-patch what ``mutate`` changes in ``obj``, optimistically locked."""
        self._patch(kind, obj, mutate, status=False)

    def patch_status(self, kind: Kind, obj: Obj, mutate: Callable[[], None]) -> None:
        """Like :meth:`patch`, on the status subresource."""
        self._patch(kind, obj, mutate, status=True)

    def delete(self, kind: Kind, obj: Obj) -> None:
        """Delete the object."""
        self.kube.delete(kind, self.namespace, obj["metadata"]["name"])

    def _patch(self, kind: Kind, obj: Obj, mutate: Callable[[], None], *, status: bool) -> None:
        before = copy.deepcopy(obj)
        mutate()
        if obj == before:
            return
        patch = merge_diff(before, obj)
        patch.setdefault("metadata", {})["resourceVersion"] = before["metadata"]["resourceVersion"]
        answer = self.kube.merge_patch(
            kind, self.namespace, before["metadata"]["name"], patch, status=status
        )
        _replace(obj, answer)


def controller_ref(owner: Obj, owner_kind: Kind) -> Obj:
    """An ownerReference marking ``owner`` as the controller."""
    return {
        "apiVersion": owner_kind.api_version,
        "kind": owner_kind.kind,
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _replace(obj: Obj, answer: Obj) -> None:
    obj.clear()
    obj.update(answer)


class Context:
    """One reconcile pass of one object."""

    def __init__(
        self,
        *,
        obj: Obj,
        kind: Kind,
        client: Client,
        log: Logger,
        emit: Callable[[Obj, str, str, str], None],
    ) -> None:
        self.obj = obj
        self.kind = kind
        self.client = client
        self.log = log
        self._emit = emit

    def event(self, type_: str, reason: str, message: str) -> None:
        """Record a Kubernetes Event about the reconciled object."""
        self._emit(self.obj, type_, reason, message)
