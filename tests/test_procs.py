"""What /proc says of a process: its stat fields, CPU time and resident memory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from mochaos.procs import rss_bytes, start_time, stat_fields


def test_cpu_seconds_count_the_work_done():
    busy = subprocess.run(
        [sys.executable, "-c",
         "import os, time\n"
         "from mochaos.procs import cpu_seconds\n"
         "before = cpu_seconds(os.getpid())\n"
         "t = time.process_time()\n"
         "while time.process_time() - t < 0.5: pass\n"
         "print(cpu_seconds(os.getpid()) - before)"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert float(busy.stdout) >= 0.4


def test_resident_memory_follows_what_a_process_holds():
    held = subprocess.run(
        [sys.executable, "-c",
         "import os\n"
         "from mochaos.procs import rss_bytes\n"
         "before = rss_bytes(os.getpid())\n"
         "block = bytearray(64 * 2**20)\n"
         "print(rss_bytes(os.getpid()) - before)"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert int(held.stdout) >= 60 * 2**20


def test_a_gone_process_has_no_resident_memory():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert rss_bytes(gone.pid) is None


def test_stat_fields_start_after_a_command_name_holding_parentheses_and_spaces(tmp_path):
    odd = tmp_path / "a) b (c"  # the kernel's comm: this name, spaces and parentheses kept
    shutil.copy(shutil.which("sleep") or "/bin/sleep", odd)
    proc = subprocess.Popen([str(odd), "30"])
    try:
        fields = stat_fields(proc.pid)
        assert fields is not None and fields[0] in ("R", "S", "D"), fields
        assert int(fields[1]) == os.getpid()  # the parent pid, read from its right place
        assert start_time(proc.pid) is not None
    finally:
        proc.kill()
        proc.wait()
    assert stat_fields(proc.pid) is None and start_time(proc.pid) is None
