"""Headless Debian Chromium for the page tests: one set of flags, one way to run it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"
)


def chromium(page: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Open ``page`` in headless Chromium with ``extra`` flags (--dump-dom, --screenshot=…)."""
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *extra,
         page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
