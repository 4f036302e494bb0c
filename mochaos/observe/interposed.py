"""The interposer's journal read into the history: the operator's requests and the watch
events it was given, with what the interposer did to each.

The journal (go/interposer/README.md, "Journal") is JSON lines, written as requests end; a
reader follows it from its start. Discovery and other requests that name no resource, and
the watch bookmarks the interposer only passed on, are left out: they are neither the
operator's work nor anything a rule did.
"""

from __future__ import annotations

import json
from typing import Any

from mochaos.observe.history import ApiCall, Delivery

Made = ApiCall | Delivery


def entry_of(line: str, *, seq: int, namespace: str) -> Made | None:
    """The history entry one journal line stands for (None: not one to record), numbered
    ``seq``; objects of other namespaces are not ``namespace``'s."""
    try:
        record: dict[str, Any] = json.loads(line)
    except ValueError:
        return None
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
