"""What /proc says of a process: its stat fields, CPU time and resident memory."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

from mochaos.procs import port_in_use, rss_bytes, start_time, stat_fields


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


def test_a_listening_port_is_in_use_on_its_address_and_on_all_addresses():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert port_in_use(port)
        assert port_in_use(port, hosts=("127.0.0.1",))
        assert port_in_use(port, hosts=("0.0.0.0",))
    assert not port_in_use(port)


def test_a_port_left_in_time_wait_is_free_as_for_a_go_listener():
    # The side that closes first keeps the connection in TIME_WAIT on the listener's port;
    # a Go component binds it all the same (Go's listeners, and so their connections, set
    # SO_REUSEADDR), so the probe must too.
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        served, _ = listener.accept()
        served.close()
        client.close()
    assert not port_in_use(port)
