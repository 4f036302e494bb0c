"""Run folders: ``reports/<run-id>/`` with a ``latest`` link, one folder per test.

Run ids sort by time (UTC timestamp first) and carry a short random suffix so
two runs started in the same second never share a folder.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path

from mochaos.errors import UsageError
from mochaos.testids import portable_nodeid

LATEST = "latest"
_MAX_NAME = 120
_UNSAFE = re.compile(r"[^A-Za-z0-9._@=+-]")


def new_run_id() -> str:
    """A fresh run id, e.g. ``20261129T190501Z-3fa2c1``."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def create_run_dir(root: Path, run_id: str) -> Path:
    """Create ``root/<run_id>/`` and point ``root/latest`` at it (atomic replace)."""
    if not run_id or run_id == LATEST or "/" in run_id or run_id.startswith("."):
        raise UsageError(
            f"invalid run id {run_id!r}", hint="use new_run_id() or a plain folder name"
        )
    latest = root / LATEST
    if latest.exists() and not latest.is_symlink():
        raise UsageError(
            f"{latest} exists and is not a symlink",
            hint="remove it; mo-chaos keeps 'latest' as a link to the newest run",
        )
    run_dir = root / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{LATEST}-{secrets.token_hex(4)}"
    os.symlink(run_id, tmp)  # relative, so the reports folder can be moved or archived
    os.replace(tmp, latest)
    return run_dir


def test_dir(run_dir: Path, nodeid: str) -> Path:
    """Create and return the folder of one test inside ``run_dir``.

    ``suites/test_race.py::test_scalein[upstream-draining]`` becomes
    ``suites.test_race.test_scalein@upstream-draining``; a test file inside a
    ``site-packages`` folder is named from there on. Characters outside a
    safe set become ``_``; when that loses information, or the name is too long,
    a short hash of the node id is appended so distinct tests never collide.
    """
    path, _, rest = portable_nodeid(nodeid).partition("::")
    path = path.removesuffix(".py").replace("/", ".")
    name = ".".join(p for p in [path, *rest.split("::")] if p) if rest else path
    if name.endswith("]") and "[" in name:
        base, _, params = name[:-1].partition("[")
        name = f"{base}@{params}"
    safe = _UNSAFE.sub("_", name).lstrip(".")
    if safe != name or len(safe) > _MAX_NAME or not safe:
        digest = hashlib.sha1(nodeid.encode()).hexdigest()[:8]
        safe = f"{safe[:_MAX_NAME]}-{digest}" if safe else f"test-{digest}"
    folder = run_dir / safe
    folder.mkdir(parents=True, exist_ok=True)
    return folder


test_dir.__test__ = False  # type: ignore[attr-defined]  # a helper, not a pytest test when imported
