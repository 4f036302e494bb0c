"""An in-memory stand-in for the reconcilers' client, for unit tests of single actor steps.

It keeps objects per kind, bumps resourceVersion on every write and refuses stale writes
with Conflict, like the apiserver; reads see the store at once (no cache lag). Logs are
collected as dicts so a test can assert on the operator's messages.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

from mochaos.ctrl.rest import Conflict, Kind, NotFound, Obj
from mochaos.model.logs import Logger
from mochaos.model.runtime.context import Context


class ListSink:
    """A log sink that keeps records in memory."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        """Keep one record."""
        self.records.append(record)

    def msgs(self) -> list[str]:
        """The messages, in order."""
        return [r["msg"] for r in self.records]


class FakeClient:
    """Objects by kind and name, with optimistic concurrency."""

    namespace = "ns"

    def __init__(self) -> None:
        self.objects: dict[Kind, dict[str, Obj]] = {}
        self.deleted: list[str] = []
        self._rv = itertools.count(1)

    def add(self, kind: Kind, obj: Obj) -> Obj:
        """Store an object as if created."""
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("namespace", self.namespace)
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        meta["resourceVersion"] = str(next(self._rv))
        self.objects.setdefault(kind, {})[meta["name"]] = obj
        return obj

    def get(self, kind: Kind, name: str) -> Obj:
        """A copy of the stored object."""
        try:
            return copy.deepcopy(self.objects[kind][name])
        except KeyError:
            raise NotFound(404, "NotFound", name) from None

    def list(
        self,
        kind: Kind,
        *,
        labels: dict[str, str] | None = None,
        where: Callable[[Obj], bool] | None = None,
    ) -> list[Obj]:
        """Copies of matching objects in name order."""
        out = []
        for name in sorted(self.objects.get(kind, {})):
            obj = self.objects[kind][name]
            lbl = obj["metadata"].get("labels") or {}
            if labels and any(lbl.get(k) != v for k, v in labels.items()):
                continue
            if where is not None and not where(obj):
                continue
            out.append(copy.deepcopy(obj))
        return out

    def list_direct(self, kind: Kind) -> list[Obj]:
        """Same as list: there is no cache."""
        return self.list(kind)

    def _write(self, kind: Kind, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        current = self.objects.get(kind, {}).get(name)
        if current is None:
            raise NotFound(404, "NotFound", name)
        if current["metadata"]["resourceVersion"] != obj["metadata"].get("resourceVersion"):
            raise Conflict(409, "Conflict", f"{name} was modified")
        obj["metadata"]["resourceVersion"] = str(next(self._rv))
        self.objects[kind][name] = copy.deepcopy(obj)

    def update(self, kind: Kind, obj: Obj) -> None:
        """Full update."""
        self._write(kind, obj)

    def update_status(self, kind: Kind, obj: Obj) -> None:
        """Status update (the fake keeps the whole object)."""
        self._write(kind, obj)

    def patch(self, kind: Kind, obj: Obj, mutate: Callable[[], None]) -> None:
        """Optimistic patch: apply ``mutate`` and write when something changed."""
        before = copy.deepcopy(obj)
        mutate()
        if obj != before:
            self._write(kind, obj)

    patch_status = patch

    def create_owned(self, kind: Kind, obj: Obj, *, owner: Obj, owner_kind: Kind) -> None:
        """Create with a controller reference."""
        self.add(kind, obj)

    def delete(self, kind: Kind, obj: Obj) -> None:
        """Delete at once (no finalizers in the fake)."""
        name = obj["metadata"]["name"]
        if self.objects.get(kind, {}).pop(name, None) is None:
            raise NotFound(404, "NotFound", name)
        self.deleted.append(name)


def context(client: FakeClient, kind: Kind, name: str, sink: ListSink) -> Context:
    """A reconcile context over a stored object."""
    return Context(
        obj=client.get(kind, name),
        kind=kind,
        client=client,  # type: ignore[arg-type]
        log=Logger(sink, namespace=client.namespace, name=name),  # type: ignore[arg-type]
        emit=lambda *_: None,
    )


def pod(name: str, **labels: str) -> Obj:
    """A running, ready CN pod with the given labels."""
    return {
        "metadata": {"name": name, "labels": dict(labels)},
        "spec": {"nodeName": "n1", "containers": [{"name": "main"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "main", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}
            ],
        },
    }


def claim(name: str, pod_name: str = "", phase: str = "", **spec: Any) -> Obj:
    """A claim naming ``pod_name``."""
    obj: Obj = {
        "metadata": {"name": name, "labels": {}},
        "spec": {"selector": {"matchLabels": {"mochaos.io/pool": "p"}}, **spec},
        "status": {},
    }
    if pod_name:
        obj["spec"]["podName"] = pod_name
    if phase:
        obj["status"]["phase"] = phase
    return obj
