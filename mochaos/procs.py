"""Processes we started, identified by pid, start time and command line (never by name)."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

EXEC_SETTLE = 5.0
"""Seconds a just-started process may take to show the command line it was started with
(the kernel publishes it late in ``execve``, after ``Popen`` has returned)."""
KILL_WAIT = 5.0
"""Seconds to wait for a process group to be gone after SIGKILL."""
TICKS = os.sysconf("SC_CLK_TCK")
"""Clock ticks per second (the unit of ``/proc/<pid>/stat``'s times)."""


def cmdline(pid: int) -> list[str]:
    """The command line of a live process; empty when it is gone (or not ours to read), and
    for a moment while it starts: ``Popen`` returns once ``execve`` has closed the
    close-on-exec files, before the kernel has set the new program's arguments."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (which may hold spaces and
    parentheses): ``[0]`` is the state, ``[1]`` the parent pid, ``[11:13]`` utime and stime,
    ``[19]`` the start time (proc(5)'s fields 3 on); None when no such process is readable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2 :].split()


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot; the same across ``execve``); None when
    no such process runs (a zombie counts as gone)."""
    fields = stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the live process ``pid`` has used so far
    (ProcessLookupError when it is gone)."""
    fields = stat_fields(pid)
    if fields is None:
        raise ProcessLookupError(pid)
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_bytes(pid: int) -> int | None:
    """Resident memory (``VmRSS``) of the process ``pid`` in bytes; None when it has none
    (gone, or a kernel thread)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return None


def executable_replaced(pid: int) -> bool:
    """True when the live process ``pid`` runs a program file that has since been replaced
    or removed on disk (a rebuilt binary): the kernel marks its ``exe`` link deleted."""
    try:
        return os.readlink(f"/proc/{pid}/exe").endswith(" (deleted)")
    except OSError:
        return False


def wait_gone(still_there: Callable[[], bool], seconds: float) -> bool:
    """Poll ``still_there`` until it is false (True) or ``seconds`` pass (False)."""
    deadline = time.monotonic() + seconds
    while still_there():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def runs(pid: int, argv: list[str], started: int | None = None) -> bool:
    """True while ``pid`` is the process recorded: its start time is ``started`` (pids are
    reused), and its command line is ``argv`` or the tail of it a wrapper exec'd (``unshare
    … sh -c 'exec "$@"' … <program> <args>``), or empty while it is being exec'd. Without
    a start time (a record of an older mo-chaos) the command line must be ``argv``."""
    if started is None:
        return bool(argv) and cmdline(pid) == argv
    if start_time(pid) != started:
        return False
    live = cmdline(pid)
    return not live or live == argv[-len(live) :]


@dataclass(frozen=True)
class Started:
    """A process we started, as a record can name it for anyone to stop later."""

    pid: int
    argv: list[str]
    """The command line it was started with."""
    started: int | None
    """Its start time (:func:`start_time`); None when it was gone before we looked."""

    @classmethod
    def of(cls, pid: int, argv: list[str]) -> Started:
        """Our child ``pid`` just started with ``argv`` (its pid cannot be reused before we
        reap it); waits until its command line shows (:data:`EXEC_SETTLE`) so that a check
        by command line right after holds too."""
        started = start_time(pid)
        if started is not None:
            wait_gone(lambda: not cmdline(pid) and start_time(pid) == started, EXEC_SETTLE)
        return cls(pid, list(argv), started)

    def running(self) -> bool:
        """True while the process runs (see :func:`runs`)."""
        return runs(self.pid, self.argv, self.started)

    def stop(self, grace: float) -> bool:
        """Stop its process group (see :func:`stop_group`)."""
        return stop_group(self.pid, self.argv, grace, started=self.started)


def stop_group(pid: int, argv: list[str], grace: float, *, started: int | None = None) -> bool:
    """SIGTERM the process group led by ``pid``, SIGKILL after ``grace`` seconds, only while
    ``pid`` is the process recorded (:func:`runs`); returns once it is gone (or
    :data:`KILL_WAIT` after SIGKILL). True when it was running and was signalled."""

    def there() -> bool:
        return runs(pid, argv, started)

    if not there():
        return False
    try:
        os.killpg(pid, signal.SIGTERM)
        os.killpg(pid, signal.SIGCONT)  # a frozen process acts on SIGTERM once resumed
    except ProcessLookupError:
        return False
    if not wait_gone(there, grace):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        wait_gone(there, KILL_WAIT)
    return True


def port_in_use(port: int, hosts: tuple[str, ...] = ("127.0.0.1", "0.0.0.0")) -> bool:
    """True when TCP ``port`` cannot be bound on one of ``hosts`` now. SO_REUSEADDR is set,
    as Go's listeners set it, so a port left in TIME_WAIT counts as free."""
    for host in hosts:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError as err:
                if err.errno in (errno.EADDRINUSE, errno.EACCES):
                    return True
                raise
    return False


def listeners(port: int) -> list[int]:
    """The pids of the processes listening on TCP ``port`` (IPv4 or IPv6), as far as
    ``/proc`` lets us see them."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return []
    return sorted(int(p.name) for p in Path("/proc").iterdir()
                  if p.name.isdigit() and _holds(p, inodes))  # fmt: skip


def holders(path: Path) -> list[int]:
    """The pids of the processes that have the file ``path`` open."""
    target = {str(path.resolve())}
    return sorted(int(p.name) for p in Path("/proc").iterdir()
                  if p.name.isdigit() and _holds(p, target))  # fmt: skip


def _holds(proc: Path, links: set[str]) -> bool:
    """True when the process ``proc`` (a /proc folder) has an open file among ``links``."""
    try:
        fds = list((proc / "fd").iterdir())
    except OSError:
        return False
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(fd) in links:
                return True
    return False
