"""The frozen-operator test's freezer (``child/freezer.py``) itself: a process that shows
the matched command line only a while after it was forked (its exec comes late, as under
load) is still found and frozen. No cluster needed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mochaos.procs import stat_fields

from support.child_runs import CHILD, ROOT
from support.polling import wait_until

SLEEP = shutil.which("sleep")
LATE_EXEC = (
    "import os, time\n"
    "if os.fork() == 0:\n"
    "    time.sleep(1.0)\n"  # longer than several of the freezer's polls
    "    program = os.environ['MARKED']\n"
    "    os.execv(program, [program, '30'])\n"
    "os.wait()\n"
)
"""A parent whose child is forked at once and exec's the program named by ``$MARKED`` a
second later: until then the child's command line is its parent's (which does not name it)."""


@pytest.mark.skipif(SLEEP is None, reason="no sleep binary")
def test_a_process_exec_ing_late_is_frozen(tmp_path: Path):
    marked = tmp_path / "marked-program"
    shutil.copy2(SLEEP, marked)
    out = tmp_path / "freezes.jsonl"
    freezer = subprocess.Popen(
        [sys.executable, str(CHILD / "freezer.py"), "--match", str(marked),
         "--seconds", "1", "--after", "0.2", "0.3", "--out", str(out)],
        cwd=ROOT,
    )  # fmt: skip
    wait_until(out.exists, "the freezer listing what runs before it", timeout=30)
    parent = subprocess.Popen(
        [sys.executable, "-c", LATE_EXEC], env={**os.environ, "MARKED": str(marked)}
    )
    try:
        (child, *_) = wait_until(lambda: _children(parent.pid), "the late child forked", timeout=10)
        wait_until(lambda: _state(child) == "T", "the late child frozen", timeout=15)
    finally:
        freezer.send_signal(signal.SIGTERM)
        freezer.wait(timeout=30)
        for pid in _children(parent.pid):
            os.kill(pid, signal.SIGKILL)
        parent.wait(timeout=30)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["pid"] for r in records if "stopped" in r] == [child], records


def _children(pid: int) -> list[int]:
    """The live children of ``pid``."""
    found = []
    for d in os.listdir("/proc"):
        fields = stat_fields(int(d)) if d.isdigit() else None
        if fields is not None and int(fields[1]) == pid:
            found.append(int(d))
    return found


def _state(pid: int) -> str | None:
    """The process's state letter (T: stopped), None when it is gone."""
    fields = stat_fields(pid)
    return None if fields is None else fields[0]
