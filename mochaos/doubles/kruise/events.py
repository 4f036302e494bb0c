"""Kubernetes Events about a workload, with the reasons kruise's controllers record
(``SuccessfulCreate``, ``SuccessfulDelete``, ``FailedCreate``…), so the namespace's Event
stream — which mo-chaos records — shows the workload controller's side too.
"""

from __future__ import annotations

import uuid

from mochaos.doubles.kruise.api import EVENTS, Api, ApiError, Obj
from mochaos.doubles.kruise.logs import Log
from mochaos.doubles.kruise.objects import name_of, namespace_of, now_rfc3339, uid_of

NORMAL = "Normal"
WARNING = "Warning"


class EventRecorder:
    """Posts core/v1 Events for one component (e.g. ``cloneset-controller``)."""

    def __init__(self, api: Api, component: str, log: Log) -> None:
        self._api = api
        self._component = component
        self._log = log

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        """Record one Event about ``obj``; a failure is logged, never raised (as client-go's
        recorder drops what it cannot send)."""
        now = now_rfc3339()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{name_of(obj)}.{uuid.uuid4().hex[:16]}",
                "namespace": namespace_of(obj),
            },
            "involvedObject": {
                "apiVersion": obj.get("apiVersion", ""),
                "kind": obj.get("kind", ""),
                "name": name_of(obj),
                "namespace": namespace_of(obj),
                "uid": uid_of(obj),
                "resourceVersion": (obj.get("metadata") or {}).get("resourceVersion", ""),
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": self._component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": self._component,
        }
        try:
            self._api.create(EVENTS, body)
        except ApiError as err:
            self._log.warn("event not recorded", reason=reason, error=str(err))
