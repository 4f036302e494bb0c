"""Kubeconfig files mo-chaos hands to processes it starts: only the run's context.

A process given the user's kubeconfig could follow its current context anywhere;
given a copy that holds exactly one context (the one the run was allowed to use), it
cannot write to any other cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mochaos.errors import UsageError


def write_single_context(source: Path, context: str | None, target: Path) -> Path:
    """Copy ``source`` to ``target`` keeping only ``context`` (default: the current one)."""
    try:
        data: dict[str, Any] = yaml.safe_load(Path(source).read_text()) or {}
    except OSError as err:
        raise UsageError(f"cannot read kubeconfig {source}: {err.strerror}") from err
    name = context or data.get("current-context")
    ctx = next((c for c in data.get("contexts") or [] if c.get("name") == name), None)
    if ctx is None:
        raise UsageError(f"context {name!r} is not in kubeconfig {source}", hint="check it")
    cluster = (ctx.get("context") or {}).get("cluster")
    user = (ctx.get("context") or {}).get("user")
    base = Path(source).resolve().parent
    clusters = [_absolute(c, "cluster", base) for c in data.get("clusters") or []
                if c.get("name") == cluster]  # fmt: skip
    users = [_absolute(u, "user", base) for u in data.get("users") or [] if u.get("name") == user]
    out = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": name,
        "contexts": [ctx],
        "clusters": clusters,
        "users": users,
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(out, sort_keys=False))
    target.chmod(0o600)
    return target


_FILE_KEYS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")


def _absolute(entry: dict[str, Any], key: str, base: Path) -> dict[str, Any]:
    """File references relative to the kubeconfig's folder, made absolute for the copy."""
    body = dict(entry.get(key) or {})
    for k in _FILE_KEYS:
        if body.get(k) and not Path(body[k]).is_absolute():
            body[k] = str(base / body[k])
    return {**entry, key: body}


def referenced_files(kubeconfig: Path) -> list[Path]:
    """The files a kubeconfig refers to (certificates, keys, token files), as written in it."""
    data: dict[str, Any] = yaml.safe_load(Path(kubeconfig).read_text()) or {}
    found = []
    for section, key in (("clusters", "cluster"), ("users", "user")):
        for entry in data.get(section) or []:
            body = entry.get(key) or {}
            found += [Path(body[k]) for k in _FILE_KEYS if body.get(k)]
    return found
