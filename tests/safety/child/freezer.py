"""Someone outside the framework freezing the operator: a separate process that, for each
new process whose command line contains each ``--match`` (repeatable), sends SIGSTOP at a
random moment ``--after`` seconds (a range) after it appeared and SIGCONT ``--seconds`` later.

``python freezer.py --match <text> --seconds N --after A B --out freezes.jsonl [--seed S]``
runs until killed (SIGTERM resumes a process it holds stopped, then exits). Each matched
process is one JSON line, written when the freezer is done with it: its pid, the value of
its ``--namespace`` argument (or null), and either ``stopped`` and ``resumed`` (epoch
seconds; ``gone`` is true when it died while stopped, ``resumed`` then being when that was
seen) or ``due`` (its moment) and ``ended`` (it exited before it, seen then). It only ever
signals processes whose command line contains every ``--match`` and which it saw start. The
``--out`` file exists once the processes running before it are listed.

A process is new when its pid was not in the previous poll's listing: pids wrap
(``pid_max`` is 32768 on many hosts, reached within one CI run), so a pid seen once may
later be another process. A new process is looked at again for :data:`EXEC_WINDOW`
seconds while it runs: between fork and exec its command line is its parent's (or empty).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import time
from pathlib import Path

POLL = 0.1
EXEC_WINDOW = 10.0
"""Seconds a new process's command line is read again until it matches (fork to exec)."""


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument(
        "--match",
        required=True,
        action="append",
        help="a text the command line contains (repeat: all of them)",
    )
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--after", type=float, nargs=2, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--seed", type=int, default=None)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    me = os.getpid()
    listed = _pids()  # only processes born later
    args.out.touch()  # says the freezer is watching
    fresh: dict[int, float] = {}  # pid -> when first seen, while its command line may change
    due: dict[int, float] = {}
    held: dict[int, float] = {}
    namespace: dict[int, str | None] = {}
    stop = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    def _matches(pid: int) -> bool:
        command = _cmdline(pid)
        return all(text in command for text in args.match)

    signal.signal(signal.SIGTERM, on_term)
    while not stop:
        now = time.time()
        now_listed = _pids()
        for pid in now_listed - listed - {me}:
            fresh[pid] = now
        listed = now_listed
        for pid, since in list(fresh.items()):
            cmdline = _cmdline(pid)
            if all(text in cmdline for text in args.match):  # read once: it may change
                del fresh[pid]
                due[pid] = now + rng.uniform(*args.after)
                namespace[pid] = _argument(cmdline, "--namespace")
            elif pid not in listed or now >= since + EXEC_WINDOW:
                del fresh[pid]
        for pid, at in list(due.items()):
            if not _matches(pid):
                del due[pid]
                _record(args.out, pid=pid, namespace=namespace[pid], due=at, ended=now)
            elif now >= at:
                del due[pid]
                os.kill(pid, signal.SIGSTOP)
                held[pid] = time.time()
        for pid, since in list(held.items()):
            if now >= since + args.seconds or not _matches(pid):
                _resume(pid, namespace[pid], since, args.out)
                del held[pid]
        time.sleep(POLL)
    for pid, since in held.items():
        _resume(pid, namespace[pid], since, args.out)
    for pid, at in due.items():  # its exit came after the last poll: record it all the same
        _record(args.out, pid=pid, namespace=namespace[pid], due=at, ended=time.time())
    return 0


def _pids() -> set[int]:
    """The pids listed in /proc now."""
    return {int(d) for d in os.listdir("/proc") if d.isdigit()}


def _argument(cmdline: str, flag: str) -> str | None:
    """The word after ``flag`` in a command line, or None."""
    words = cmdline.split()
    return words[words.index(flag) + 1] if flag in words[:-1] else None


def _resume(pid: int, namespace: str | None, since: float, out: Path) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
        gone = False
    except ProcessLookupError:
        gone = True
    _record(out, pid=pid, namespace=namespace, stopped=since, resumed=time.time(), gone=gone)


def _record(out: Path, **fields: object) -> None:
    with out.open("a") as fh:
        fh.write(json.dumps(fields) + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
