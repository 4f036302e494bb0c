"""What an interposer rule is: an action on the operator's requests or watch events that
match, as the interposer's control API takes it (go/interposer/README.md, "Rules").

A rule names objects by kind (``CNClaim``, ``Pod``, …: :data:`RESOURCES` says their group and
plural) and by verb. A rule that could never match — a kind mo-chaos does not know, a verb
that is none of the apiserver's — is a usage error before anything is sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mochaos.ctrl.objects import GROUP
from mochaos.errors import UsageError

KRUISE = "apps.kruise.io"
RESOURCES: dict[str, tuple[str, str]] = {
    "Pod": ("", "pods"),
    "ConfigMap": ("", "configmaps"),
    "Service": ("", "services"),
    "Event": ("", "events"),
    "CNClaim": (GROUP, "cnclaims"),
    "CNClaimSet": (GROUP, "cnclaimsets"),
    "CNPool": (GROUP, "cnpools"),
    "CNSet": (GROUP, "cnsets"),
    "LogSet": (GROUP, "logsets"),
    "DNSet": (GROUP, "dnsets"),
    "CloneSet": (KRUISE, "clonesets"),
    "StatefulSet": (KRUISE, "statefulsets"),
}
"""The kinds a rule may name: (API group, plural)."""
WRITES = ("create", "update", "patch", "delete")
"""The verbs of a write."""
VERBS = ("get", "list", "watch", *WRITES, "deletecollection")
ACTIONS = ("hold", "fail", "crash", "freeze", "coalesce", "stale-list")
FAIL_STATUSES = (409, 500, 504)


def resource_of(kind: str) -> tuple[str, str]:
    """(group, plural) of ``kind``; UsageError naming the known kinds otherwise."""
    try:
        return RESOURCES[kind]
    except KeyError:
        raise UsageError(
            f"no interposer rule can match kind {kind!r}",
            hint=f"name one of {', '.join(RESOURCES)}",
        ) from None


@dataclass(frozen=True)
class Field:
    """A condition on the object a rule sees (a write's body, a watch event's object):
    ``op`` is ``eq``, ``ne``, ``exists`` or ``absent`` at a dot ``path``."""

    path: str
    op: str
    value: Any = None

    def to_json(self) -> dict[str, Any]:
        """The control API's form."""
        data: dict[str, Any] = {"path": self.path, "op": self.op}
        if self.op in ("eq", "ne"):
            data["value"] = self.value
        return data


@dataclass(frozen=True)
class Rule:
    """One rule: ``action`` on what ``kind``/``verbs``/``name``/``subresource``/``fields``
    match in ``namespace``."""

    id: str
    action: str
    kind: str
    namespace: str
    verbs: tuple[str, ...] = ()
    name: str | None = None
    subresource: str | None = None
    fields: tuple[Field, ...] = ()
    times: int | None = None
    timeout_seconds: float | None = None
    status: int | None = None
    signal_pid: int | None = None
    listed: dict[str, Any] | None = field(default=None, compare=False)
    """A stale-list rule's answer: the whole List object."""

    def __post_init__(self) -> None:
        resource_of(self.kind)
        if self.action not in ACTIONS:
            raise UsageError(f"unknown interposer action {self.action!r}",
                             hint=f"use one of {', '.join(ACTIONS)}")  # fmt: skip
        unknown = [v for v in self.verbs if v not in VERBS]
        if unknown:
            raise UsageError(f"no request of the operator is a {', '.join(unknown)}",
                             hint=f"verbs are {', '.join(VERBS)}")  # fmt: skip
        if self.status is not None and self.status not in FAIL_STATUSES:
            raise UsageError(f"an interposer fails a write with {self.status}",
                             hint=f"use one of {', '.join(map(str, FAIL_STATUSES))}")  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        """The rule as the control API takes it."""
        group, resource = resource_of(self.kind)
        match: dict[str, Any] = {"group": group, "resource": resource, "namespace": self.namespace}
        if self.verbs:
            match["verbs"] = list(self.verbs)
        if self.name is not None:
            match["name"] = self.name
        if self.subresource is not None:
            match["subresource"] = self.subresource
        if self.fields:
            match["fields"] = [f.to_json() for f in self.fields]
        data: dict[str, Any] = {"id": self.id, "action": self.action, "match": match}
        for key in ("times", "timeout_seconds", "status", "signal_pid"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        if self.listed is not None:
            data["list"] = self.listed
        return data
