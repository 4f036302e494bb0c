"""actionlint, built from its Go module with ``go install`` once and kept in mo-chaos's cache."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from filelock import FileLock

from mochaos.paths import cache_dir

MODULE = "github.com/rhysd/actionlint/cmd/actionlint"
VERSION = "v1.7.12"


def actionlint() -> Path | None:
    """The actionlint binary (built now when the cache lacks it); None when Go is absent."""
    go = shutil.which("go")
    if go is None:
        return None
    binary = cache_dir() / "tools" / f"actionlint-{VERSION}" / "actionlint"
    binary.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(binary.parent / ".lock"), timeout=900):
        if not binary.is_file():
            with tempfile.TemporaryDirectory(dir=binary.parent) as tmp:
                subprocess.run([go, "install", f"{MODULE}@{VERSION}"], check=True,
                               env=dict(os.environ, GOBIN=tmp), capture_output=True,
                               timeout=900)  # fmt: skip
                (Path(tmp) / "actionlint").rename(binary)
    return binary
