"""The apiserver audit log as a second witness: who wrote what, and how much we asked.

The log is JSON lines of audit.k8s.io/v1 Events. A slice starts where the file
ended when the test began (inode + offset, so a rotation during the test —
the apiserver renames the file and starts a new one — loses nothing) and
covers every file written since. Counts are per user agent and object; they
let the framework check its own record of the agent's writes, attribute the
operator's writes, and measure its own API load.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
FRAMEWORK_AGENT_PREFIX = "mochaos/"
AGENT_USER_AGENT = "mochaos/agent"


def complete_events(
    path: Path, offset: int = 0, *, containing: bytes | None = None
) -> Iterator[dict[str, Any]]:
    """Every audit event of ``path`` past ``offset`` whose line the apiserver has finished
    writing: the file is read while it grows, and a last line without its newline is a
    half-written event, left for the next read. The one reader of the audit log.

    ``containing``: only lines holding these bytes are parsed (the apiserver writes compact
    JSON, e.g. ``b'"verb":"watch"'``), a prefilter that spares parsing the rest. An
    ``offset`` past the file's end (it was replaced since) reads from its start.
    """
    with path.open("rb") as fh:
        fh.seek(offset if offset <= os.fstat(fh.fileno()).st_size else 0)
        for raw in fh:
            if raw.endswith(b"\n") and (containing is None or containing in raw):
                yield json.loads(raw)


@dataclass
class AuditCounts:
    """What the audit log says about one namespace during one test."""

    operator_writes: Counter[str] = field(default_factory=Counter)
    operator_verbs: Counter[str] = field(default_factory=Counter)
    """The operator's writes by verb, plus ``refused``: those answered 4xx/5xx."""
    agent_patches: Counter[str] = field(default_factory=Counter)
    framework_requests: int = 0
    duration: float = 0.0

    @property
    def framework_rps(self) -> float:
        """Requests per second the framework made (0 for an empty slice)."""
        return self.framework_requests / self.duration if self.duration > 0 else 0.0


class AuditSlice:
    """The part of an audit log written after construction (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.started = time.time()
        try:
            st = path.stat()
            self._inode, self._offset = st.st_ino, st.st_size
        except OSError:
            self._inode, self._offset = None, 0

    def _files(self) -> list[tuple[Path, int]]:
        """(file, offset to start at) for every file holding events since the start."""
        files = []
        for f in sorted(self.path.parent.glob(f"{self.path.stem}*{self.path.suffix}"),
                        key=lambda p: p.stat().st_mtime):  # fmt: skip
            st = f.stat()
            if st.st_ino == self._inode:
                files.append((f, self._offset))
            elif st.st_mtime >= self.started:
                files.append((f, 0))
        return files

    def events(self, namespace: str) -> Iterator[dict[str, Any]]:
        """Audit events about objects in ``namespace`` (or the namespace itself)."""
        for f, offset in self._files():
            for event in complete_events(f, offset, containing=namespace.encode()):
                ref = event.get("objectRef") or {}
                if ref.get("namespace") == namespace or (
                    ref.get("resource") == "namespaces" and ref.get("name") == namespace
                ):
                    yield event

    def count(self, namespace: str, *, operator_user_agent: str) -> AuditCounts:
        """Count the operator's writes per object, the agent's patches, our requests."""
        counts = AuditCounts(duration=max(time.time() - self.started, 0.0))
        for event in self.events(namespace):
            agent = event.get("userAgent") or ""
            ref = event.get("objectRef") or {}
            verb = event.get("verb")
            obj = f"{ref.get('resource')}/{ref.get('name')}"
            if operator_user_agent and agent.startswith(operator_user_agent):
                if verb in WRITE_VERBS:
                    counts.operator_writes[obj] += 1
                    counts.operator_verbs[verb] += 1
                    code = (event.get("responseStatus") or {}).get("code") or 0
                    if code >= 400:
                        counts.operator_verbs["refused"] += 1
            elif agent.startswith(FRAMEWORK_AGENT_PREFIX):
                counts.framework_requests += 1
                if agent.startswith(AGENT_USER_AGENT) and verb == "patch":
                    counts.agent_patches[str(ref.get("name"))] += 1
        return counts
