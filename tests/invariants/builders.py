"""A tiny builder for readable hand-written histories.

``at(t)`` moves the clock; ``pod``/``claim``/``claimset`` emit a change with the
given fields updated (others kept; ``None`` clears); ``by=`` attributes the
change to one of our own actions (an ActionRecord whose write_rv is its rv,
recorded after the change as a write that returned); ``scale`` records the
intent first, as mo-chaos's own actions do. Every entry gets the next seq,
every change the next resourceVersion.
"""

from __future__ import annotations

from typing import Any

from mochaos.ctrl.objects import (
    API_VERSION,
    CLAIM_FINALIZER,
    CLAIMED_BY_LABEL,
    CLAIMSET_LABEL,
    KRUISE_STATE_LABEL,
    PHASE_LABEL,
    POOL_NAME_LABEL,
)
from mochaos.faults import of_action
from mochaos.observe.history import (
    ActionRecord,
    ApiCall,
    Change,
    Entry,
    History,
    LogRecord,
    Marker,
    PeriodEdge,
    PeriodKind,
)

KEEP: Any = object()
"""Default of every field argument: keep the object's previous value."""

NAMESPACE = "chaos-test"


class HistoryBuilder:
    """Accumulates entries in order; ``build()`` returns the History."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.t = 0.0
        self._rv = 100
        self._fields: dict[tuple[str, str], dict[str, Any]] = {}
        self._objects: dict[tuple[str, str], dict[str, Any]] = {}

    def at(self, t: float) -> HistoryBuilder:
        """Set the time of the following entries."""
        self.t = t
        return self

    def pod(
        self,
        name: str,
        *,
        phase: Any = KEEP,
        claimed_by: Any = KEEP,
        pool: Any = KEEP,
        deleting: Any = KEEP,
        finalizers: Any = KEEP,
        kruise: Any = KEEP,
        by: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> Change:
        """Emit a change of pod ``name`` (pool label defaults to "pool"; ``kruise``: its
        OpenKruise lifecycle state)."""
        fields = self._update(
            "Pod",
            name,
            {"pool": "pool"},
            phase=phase,
            claimed_by=claimed_by,
            pool=pool,
            deleting=deleting,
            finalizers=finalizers,
            kruise=kruise,
        )
        labels = {}
        if fields.get("phase"):
            labels[PHASE_LABEL] = fields["phase"]
        if fields.get("claimed_by"):
            labels[CLAIMED_BY_LABEL] = fields["claimed_by"]
        if fields.get("pool"):
            labels[POOL_NAME_LABEL] = fields["pool"]
        if fields.get("kruise"):
            labels[KRUISE_STATE_LABEL] = fields["kruise"]
        meta = self._meta(name, fields, labels)
        if fields.get("finalizers"):
            meta["finalizers"] = list(fields["finalizers"])
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta}
        return self._emit("Pod", name, obj, by, params)

    def claim(
        self,
        name: str,
        *,
        pod: Any = KEEP,
        source: Any = KEEP,
        phase: Any = KEEP,
        store: Any = KEEP,
        claimset: Any = KEEP,
        deleting: Any = KEEP,
        finalizers: Any = KEEP,
        by: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> Change:
        """Emit a change of CNClaim ``name`` (finalizer defaults to the claim manager's)."""
        fields = self._update(
            "CNClaim",
            name,
            {"finalizers": [CLAIM_FINALIZER]},
            pod=pod,
            source=source,
            phase=phase,
            store=store,
            claimset=claimset,
            deleting=deleting,
            finalizers=finalizers,
        )
        labels = {CLAIMSET_LABEL: fields["claimset"]} if fields.get("claimset") else {}
        meta = self._meta(name, fields, labels)
        meta["finalizers"] = list(fields.get("finalizers") or [])
        if fields.get("claimset"):
            owner = {"kind": "CNClaimSet", "name": fields["claimset"], "controller": True}
            meta["ownerReferences"] = [{"apiVersion": API_VERSION, **owner}]
        spec: dict[str, Any] = {"selector": {}}
        if fields.get("pod"):
            spec["podName"] = fields["pod"]
        if fields.get("source"):
            spec["sourcePod"] = {"podName": fields["source"]}
        status: dict[str, Any] = {}
        if fields.get("phase"):
            status["phase"] = fields["phase"]
        if fields.get("store"):
            status["store"] = {"string": fields["store"]}
        obj = {"apiVersion": API_VERSION, "kind": "CNClaim", "metadata": meta}
        obj |= {"spec": spec, "status": status}
        return self._emit("CNClaim", name, obj, by, params)

    def claimset(
        self,
        name: str,
        *,
        replicas: Any = KEEP,
        status_replicas: Any = KEEP,
        ready: Any = KEEP,
        deleting: Any = KEEP,
        finalizers: Any = KEEP,
        by: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> Change:
        """Emit a change of CNClaimSet ``name``."""
        fields = self._update(
            "CNClaimSet",
            name,
            {},
            replicas=replicas,
            status_replicas=status_replicas,
            ready=ready,
            deleting=deleting,
            finalizers=finalizers,
        )
        status = {}
        if fields.get("status_replicas") is not None:
            status["replicas"] = fields["status_replicas"]
        if fields.get("ready") is not None:
            status["readyReplicas"] = fields["ready"]
        meta = self._meta(name, fields, {})
        if fields.get("finalizers"):
            meta["finalizers"] = list(fields["finalizers"])
        obj = {
            "apiVersion": API_VERSION,
            "kind": "CNClaimSet",
            "metadata": meta,
            "spec": {"replicas": fields.get("replicas") or 0},
            "status": status,
        }
        return self._emit("CNClaimSet", name, obj, by, params)

    def scale(self, name: str, replicas: int, *, lands: bool = True) -> ActionRecord:
        """Our scale of claim set ``name``: its intent record, then (``lands``) the change.

        The record is complete, as the history holds it once the write returned:
        ``write_rv`` is the change's resourceVersion (None when it does not land).
        """
        record = self.action(
            "scale_claimset",
            kind="CNClaimSet",
            name=name,
            write_rv=self._rv + 1 if lands else None,
            params={"replicas": replicas},
            intent=True,
        )
        if lands:
            self.claimset(name, replicas=replicas)
        return record

    def other(self, kind: str, name: str) -> Change:
        """Emit a change of an object of a kind no invariant judges (Event, CNPool)."""
        obj = {"apiVersion": "v1", "kind": kind, "metadata": self._meta(name, {}, {})}
        return self._emit(kind, name, obj, None, None)

    def delete(self, kind: str, name: str, *, by: str | None = None) -> Change:
        """Emit the DELETED event of an object (its last state)."""
        last = self._objects.pop((kind, name))
        self._fields.pop((kind, name))
        self._rv += 1
        change = Change(self._next_seq(), self.t, kind, "DELETED", NAMESPACE, name, self._rv, last)
        self.entries.append(change)
        if by:
            self.action(by, kind=kind, name=name, write_rv=change.rv)
        return change

    def call(
        self,
        verb: str,
        resource: str,
        name: str,
        status: int,
        *,
        action: str = "pass",
        subresource: str = "",
    ) -> ApiCall:
        """Emit one request of the operator's, as the interposer's journal records it."""
        call = ApiCall(self._next_seq(), self.t, verb, resource, NAMESPACE, name,
                       subresource=subresource, status=status, action=action)  # fmt: skip
        self.entries.append(call)
        return call

    def log(self, msg: str, *, name: str, level: str = "info", **fields: Any) -> LogRecord:
        """Emit one operator log record about object ``name``."""
        record = LogRecord(self._next_seq(), self.t, level, msg, NAMESPACE, name, fields)
        self.entries.append(record)
        return record

    def action(
        self,
        action: str,
        *,
        kind: str,
        name: str,
        write_rv: int | None = None,
        params: dict[str, Any] | None = None,
        intent: bool = False,
    ) -> ActionRecord:
        """Emit one of our own action records (the agent's for request_migration; a fault's
        own action names its fault kind, as the write path records it)."""
        component = "agent" if action == "request_migration" else "chaos"
        fault = of_action(action, None)
        record = ActionRecord(
            self._next_seq(),
            self.t,
            action,
            kind,
            name,
            params or {},
            write_rv=write_rv,
            component=component,
            intent=intent,
            fault=fault.name if fault is not None else None,
        )
        self.entries.append(record)
        return record

    def period(
        self, kind: PeriodKind, edge: str, subject: str, reason: str = "", *, component: str = ""
    ) -> PeriodEdge:
        """Emit one end (``"start"`` or ``"end"``) of a period of ``kind``."""
        entry = PeriodEdge(self._next_seq(), self.t, kind.name, edge, subject, reason,
                           component or ("operator" if kind.name == "operator-freeze"
                                         else "cluster"))  # fmt: skip
        self.entries.append(entry)
        return entry

    def marker(self, label: str) -> Marker:
        """Emit a scenario marker."""
        marker = Marker(self._next_seq(), self.t, label)
        self.entries.append(marker)
        return marker

    def build(self) -> History:
        """The History of everything emitted so far."""
        return History(self.entries)

    def _update(
        self, kind: str, name: str, defaults: dict[str, Any], **changes: Any
    ) -> dict[str, Any]:
        fields = self._fields.setdefault((kind, name), dict(defaults))
        fields.update({k: v for k, v in changes.items() if v is not KEEP})
        if fields.get("deleting"):
            fields.setdefault("deleted_at", self.t)
        return fields

    def _meta(self, name: str, fields: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "labels": labels}
        if fields.get("deleting"):
            meta["deletionTimestamp"] = f"t={fields['deleted_at']:g}"
        return meta

    def _emit(
        self,
        kind: str,
        name: str,
        obj: dict[str, Any],
        by: str | None,
        params: dict[str, Any] | None,
    ) -> Change:
        event = "MODIFIED" if (kind, name) in self._objects else "ADDED"
        self._objects[(kind, name)] = obj
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        change = Change(self._next_seq(), self.t, kind, event, NAMESPACE, name, self._rv, obj)
        self.entries.append(change)
        if by:
            self.action(by, kind=kind, name=name, write_rv=change.rv, params=params)
        return change

    def _next_seq(self) -> int:
        return len(self.entries) + 1


def bind(b: HistoryBuilder, claim: str, pod: str, *, claimset: str = "S1") -> None:
    """Emit a pod labelled Bound for a claim, and the claim Bound to it with its store."""
    b.pod(pod, phase="Bound", claimed_by=claim)
    b.claim(claim, pod=pod, phase="Bound", store=pod, claimset=claimset)


def ticks(b: HistoryBuilder, start: float, stop: float, *, every: float = 2.0) -> None:
    """Emit filler log records about no object, so the history's clock moves on."""
    t = start
    while t <= stop:
        b.at(t).log("object is synced", name="")
        t += every
