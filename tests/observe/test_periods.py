"""The probes that record a dependency's outages and the operator's freezes (as typed
period ends: edge, subject, reason, time)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

from mochaos.observe.periods import stopped, watch, watch_freezes

from support.polling import wait_until


def _recorder(marks: list[tuple[str, str, float]]):
    def edge(which: str, *, reason: str = "", t: float, subject: str = "") -> None:
        marks.append((which, f"{subject}{' ' if subject else ''}{reason}".strip(), t))

    return edge


def watch_dependency(name: str, check, edge, stop: threading.Event) -> None:
    """One dependency's watch, as the recorder runs it (the subject is its name)."""
    watch(check, edge=lambda which, **kw: edge(which, subject=name, **kw), stop=stop)


def _watching(target, *args):
    marks: list[tuple[str, str, float]] = []
    stop = threading.Event()
    thread = threading.Thread(target=target, args=(*args, _recorder(marks), stop), daemon=True)
    thread.start()
    return marks, stop, thread


def test_a_dependency_down_then_back_is_one_pair_of_markers():
    why: list[str | None] = [None]
    marks, stop, thread = _watching(watch_dependency, "matrixone", lambda: why[0])
    try:
        why[0] = "not running"
        wait_until(lambda: marks, what="the outage marked", timeout=10)
        why[0] = None
        wait_until(lambda: len(marks) == 2, what="the recovery marked", timeout=10)
    finally:
        stop.set()
        thread.join()
    (down, why, t0), (up, subject, t1) = marks
    assert (down, why) == ("start", "matrixone not running")
    assert (up, subject) == ("end", "matrixone") and t1 >= t0


def test_a_recovery_just_before_the_stop_is_marked():
    why: list[str | None] = [None]
    marks, stop, thread = _watching(watch_dependency, "matrixone", lambda: why[0])
    try:
        why[0] = "not running"
        wait_until(lambda: marks, what="the outage marked", timeout=10)
    finally:
        why[0] = None  # back, and the watch told to stop before its next periodic probe
        stop.set()
        thread.join()
    assert [(edge, what) for edge, what, _ in marks] == [
        ("start", "matrixone not running"), ("end", "matrixone"),
    ]  # fmt: skip


def test_what_holds_when_the_watch_starts_is_marked_before_any_period():
    marks: list[tuple[str, str, float]] = []
    stop = threading.Event()
    stop.set()  # told to stop at once: its one probe is both its first and its last
    watch_dependency("kruise", lambda: "not running", _recorder(marks), stop)
    assert [(e, w) for e, w, _ in marks] == [("start", "kruise not running")]


def test_a_failure_that_begins_at_the_stop_is_marked():
    stop = threading.Event()
    marks: list[tuple[str, str, float]] = []
    check = lambda: "not running" if stop.is_set() else None  # noqa: E731
    thread = threading.Thread(
        target=watch_dependency, args=("matrixone", check, _recorder(marks), stop)
    )
    thread.start()
    stop.set()
    thread.join()
    assert [(e, w) for e, w, _ in marks] == [("start", "matrixone not running")]


def test_a_period_still_open_at_the_stop_stays_open():
    marks, stop, thread = _watching(watch_dependency, "matrixone", lambda: "not running")
    try:
        wait_until(lambda: marks, what="the outage marked", timeout=10)
    finally:
        stop.set()
        thread.join()
    assert [(e, w) for e, w, _ in marks] == [("start", "matrixone not running")]


def test_a_check_that_raises_counts_as_down():
    def broken() -> str | None:
        raise OSError("connection refused")

    marks, stop, thread = _watching(watch_dependency, "kruise", broken)
    try:
        wait_until(lambda: marks, what="the outage marked", timeout=10)
    finally:
        stop.set()
        thread.join()
    assert marks[0][:2] == ("start", "kruise OSError: connection refused")


def test_a_stopped_process_is_a_freeze_with_its_window():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        check = stopped(lambda: proc.pid)
        assert check() is None
        marks, stop, thread = _watching(watch_freezes, lambda: proc.pid)
        os.kill(proc.pid, signal.SIGSTOP)
        wait_until(lambda: marks, what="the freeze marked", timeout=10)
        assert check() == str(proc.pid)
        os.kill(proc.pid, signal.SIGCONT)
        wait_until(lambda: len(marks) == 2, what="the thaw marked", timeout=10)
        stop.set()
        thread.join()
    finally:
        proc.kill()
        proc.wait()
    assert [m[:2] for m in marks] == [("start", f"{proc.pid} SIGSTOP"), ("end", str(proc.pid))]
    assert stopped(lambda: None)() is None  # no process (killed, a container): no freeze
