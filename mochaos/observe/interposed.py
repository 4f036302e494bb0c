"""The interposer's journal read into the history: the operator's requests and the watch
events it was given, with what the interposer did to each.

The journal (go/interposer/README.md, "Journal") is JSON lines, written as requests end; a
reader follows it from its start. Discovery and other requests that name no resource, and
the watch bookmarks the interposer only passed on, are left out: they are neither the
operator's work nor anything a rule did. A rule that holds back the operator's watch events
(freeze, coalesce) is a period the operator was blind (``OPERATOR_BLIND``), from the rule's
being added to its release or expiry; a hold rule, one it was held (``OPERATOR_HELD``), from
the write it first took to its release or expiry.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from mochaos.observe.history import (
    OPERATOR_BLIND,
    OPERATOR_HELD,
    ApiCall,
    Delivery,
    PeriodEdge,
)

Made = ApiCall | Delivery | PeriodEdge
BLINDING = ("freeze", "coalesce")
"""The rule actions that hold back the operator's view."""
ENDS = ("released", "expired", "removed")
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


class JournalReader:
    """Reads one interposer's journal, a line at a time, for one namespace (it remembers
    which of its rules blind the operator, to end their periods)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self._open: dict[str, str] = {}
        """Rule id -> the kind of the period it opened, until it ends."""

    def entry_of(self, line: str, *, seq: int) -> Made | None:
        """The history entry one journal line stands for (None: not one to record)."""
        try:
            record: dict[str, Any] = json.loads(line)
        except ValueError:
            return None
        if record.get("type") == "rule":
            return self._period(record, seq)
        return entry_of(record, seq=seq, namespace=self.namespace)

    def _period(self, record: dict[str, Any], seq: int) -> PeriodEdge | None:
        rule, what = str(record.get("rule") or ""), record.get("what")
        detail = record.get("detail") or {}
        spec = detail.get("spec") or {}
        t = float(record["t"])
        if what == "added" and spec.get("action") in BLINDING:
            self._open[rule] = OPERATOR_BLIND.name
            resource = (spec.get("match") or {}).get("resource") or "every kind"
            return PeriodEdge(seq, t, OPERATOR_BLIND.name, "start", rule, resource, "operator")
        if what == "matched" and detail.get("action") == "hold" and rule not in self._open:
            self._open[rule] = OPERATOR_HELD.name
            held = f"{detail.get('verb')} {detail.get('resource')}/{detail.get('name')}"
            return PeriodEdge(seq, t, OPERATOR_HELD.name, "start", rule, held, "operator")
        if what in ENDS and rule in self._open:
            return PeriodEdge(seq, t, self._open.pop(rule), "end", rule, component="operator")
        return None


def entry_of(record: dict[str, Any], *, seq: int, namespace: str) -> Made | None:
    """The history entry of one request or event record of the journal (None: not one to
    record), numbered ``seq``; objects of other namespaces are not ``namespace``'s."""
    kind = record.get("type")
    ns = str(record.get("namespace") or "")
    if ns not in ("", namespace) or not record.get("resource"):
        return None
    if kind == "request":
        obj = record.get("object") or {}
        rv = obj.get("resourceVersion")
        return ApiCall(
            seq=seq, t=float(record["t"]), verb=str(record.get("verb", "")),
            resource=str(record["resource"]), namespace=ns, name=str(record.get("name") or ""),
            subresource=str(record.get("subresource") or ""),
            status=int(record.get("status") or 0),
            rv=int(rv) if str(rv or "").isdigit() else None,
            action=str(record.get("action") or "pass"), rule=str(record.get("rule") or ""),
            latency_ms=record.get("latency_ms"), held_ms=record.get("held_ms") or None,
        )  # fmt: skip
    if kind == "event":
        action = str(record.get("action") or "delivered")
        if record.get("event") == "BOOKMARK" and action == "delivered":
            return None
        return Delivery(
            seq=seq, t=float(record["t"]), resource=str(record["resource"]), namespace=ns,
            name=str(record.get("name") or ""), event=str(record.get("event") or ""),
            rv=record.get("rv"), action=action, rule=str(record.get("rule") or ""),
        )  # fmt: skip
    return None


def write_counts(calls: Iterable[ApiCall]) -> Counter[str]:
    """The operator's writes by verb, plus ``refused``: those the apiserver answered 4xx/5xx
    (failures the interposer made up are not the apiserver's and not counted as refused)."""
    counts: Counter[str] = Counter()
    for call in calls:
        if call.verb in WRITE_VERBS:
            counts[call.verb] += 1
            if call.status >= 400 and call.action != "failed":
                counts["refused"] += 1
    return counts
