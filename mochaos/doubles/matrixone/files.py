"""The files the MatrixOne double keeps in its state dir, and readers for them.

- ``control-address``: ``host:port`` of the HTTP control interface (written once listening,
  removed on a clean stop);
- ``hosts``: the machine's /etc/hosts plus the names the operator dials, mapped to each
  namespace's loopback address; rewritten in place (same inode) so it can be bind-mounted
  over /etc/hosts in the operator's mount namespace;
- ``namespaces.json``: per namespace its address, state, ports, discovery names and stores;
- ``events.jsonl``: every RPC the double answered and every store change, one JSON object
  per line (time, namespace, service, method, key fields);
- ``matrixone.log``: MatrixOne's own log (level ``--mo-log-level``, default warn).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONTROL_ADDRESS = "control-address"
HOSTS = "hosts"
NAMESPACES = "namespaces.json"
EVENTS = "events.jsonl"
MO_LOG = "matrixone.log"


def control_address(state_dir: Path) -> str | None:
    """The running double's control address, or None when it is not listening."""
    try:
        text = (Path(state_dir) / CONTROL_ADDRESS).read_text().strip()
    except FileNotFoundError:
        return None
    return text or None


def namespaces(state_dir: Path) -> dict[str, Any]:
    """namespaces.json's ``namespaces`` map ({} before the double wrote it)."""
    try:
        data = json.loads((Path(state_dir) / NAMESPACES).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return dict(data.get("namespaces") or {})


def read_events(state_dir: Path, namespace: str | None = None) -> list[dict[str, Any]]:
    """The event log's records, oldest first, optionally of one namespace.

    A partly written last line (the double is appending) is skipped.
    """
    path = Path(state_dir) / EVENTS
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if namespace is None or rec.get("namespace") == namespace:
            out.append(rec)
    return out
