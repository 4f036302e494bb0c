"""What /proc says of a process: its CPU time and resident memory."""

from __future__ import annotations

import subprocess
import sys

from mochaos.procs import rss_bytes


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
