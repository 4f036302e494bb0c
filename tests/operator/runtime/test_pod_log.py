"""Following the operator pod's log: kubelet timestamps, repeats skipped, restarts followed,
each line handed on with when it was written and when it arrived."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from urllib3.exceptions import ReadTimeoutError

from mochaos.operator.runtime.pod_log import (
    LogLine,
    PodLogFollower,
    parse_log_timestamp,
    split_log_line,
)


def stamp(ns: int) -> str:
    seconds, frac = divmod(ns, 1_000_000_000)
    text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{frac:09d}".rstrip("0").rstrip(".") + "Z"


def test_log_timestamps_parse_to_nanoseconds() -> None:
    assert parse_log_timestamp("2026-05-30T11:24:06.5Z") == 1780140246_500000000
    assert parse_log_timestamp("2026-05-30T11:24:06.000000001Z") == 1780140246_000000001
    assert parse_log_timestamp("2026-05-30T11:24:06Z") == 1780140246_000000000
    assert split_log_line('2026-05-30T11:24:06Z {"msg":"finalize CNClaim"}') == (
        1780140246_000000000,
        '{"msg":"finalize CNClaim"}',
    )
    assert split_log_line("no stamp here") is None
    now = time.time_ns()
    assert parse_log_timestamp(stamp(now)) == now


def pod(name: str, uid: str, *, created: float, phase: str = "Running") -> Any:
    return SimpleNamespace(
        metadata=SimpleNamespace(
            name=name, uid=uid, creation_timestamp=created, deletion_timestamp=None
        ),
        status=SimpleNamespace(phase=phase, conditions=[]),
    )


class FakeStream:
    """A followed log: yields its chunks, then times out (idle)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def stream(self, amt: int, decode_content: bool = True):
        for line in self.lines:
            yield (line + "\n").encode()
        raise ReadTimeoutError(None, "/log", "read timed out")

    def release_conn(self) -> None:
        pass


class FakeCore:
    def __init__(self) -> None:
        self.pods: list[Any] = []
        self.logs: dict[str, list[list[str]]] = {}

    def list_namespaced_pod(self, namespace: str, **kw: Any) -> Any:
        return SimpleNamespace(items=list(self.pods))

    def read_namespaced_pod_log(self, name: str, namespace: str, **kw: Any) -> FakeStream:
        assert kw["follow"] is True and kw["timestamps"] is True
        assert kw["_preload_content"] is False
        batches = self.logs[name]
        return FakeStream(batches.pop(0) if len(batches) > 1 else batches[0])


def follower(core: FakeCore, log: Path | None = None, **kw: Any) -> PodLogFollower:
    return PodLogFollower(core=lambda: core, namespace="mo-system", selector="app=op",
                          started_ns=time.time_ns(), log_path=log, **kw)  # fmt: skip


def test_follow_skips_old_and_repeated_lines_and_follows_a_replacement_pod(tmp_path: Path) -> None:
    core = FakeCore()
    logs = follower(core, tmp_path / "operator.log")
    t0 = logs.started_ns
    s = 1_000_000_000
    core.pods = [pod("op-a", "uid-a", created=1.0)]
    core.logs["op-a"] = [
        [f"{stamp(t0 - s)} before-start", f"{stamp(t0 + s)} one", f"{stamp(t0 + 2 * s)} two"],
        # The reconnect after an idle timeout repeats what was already seen.
        [f"{stamp(t0 + s)} one", f"{stamp(t0 + 2 * s)} two", f"{stamp(t0 + 3 * s)} three"],
    ]
    core.logs["op-b"] = [[f"{stamp(t0 + 4 * s)} b-one"]]
    stop = threading.Event()
    seen: list[str] = []
    for line in logs.follow(stop):
        seen.append(line)
        if line == "three":
            core.pods = [pod("op-b", "uid-b", created=2.0)]
        if line == "b-one":
            stop.set()
    assert seen == ["one", "two", "three", "b-one"]
    assert (tmp_path / "operator.log").read_text() == "one\ntwo\nthree\nb-one\n"


def test_each_line_carries_the_kubelets_stamp_and_its_receive_time_in_order() -> None:
    core = FakeCore()
    ticks = iter([100.0, 100.5, 101.0])
    logs = follower(core, clock=lambda: next(ticks))
    t0 = logs.started_ns
    core.pods = [pod("op-a", "uid-a", created=1.0)]
    # Three lines within one second: the operator's own RFC 3339 `ts` cannot order them.
    same_second = '{"ts":"2026-05-30T11:24:06Z","msg":"%s"}'
    core.logs["op-a"] = [[f"{stamp(t0 + 1000 * k)} {same_second % m}"
                          for k, m in enumerate(("a", "b", "c"), start=1)]]  # fmt: skip
    stop = threading.Event()
    lines: list[LogLine] = []
    for line in logs.follow(stop):
        lines.append(line)
        if len(lines) == 3:
            stop.set()
    assert [line.received for line in lines] == [100.0, 100.5, 101.0]
    assert [line.written for line in lines] == [(t0 + 1000 * k) / 1e9 for k in (1, 2, 3)]
    assert lines[0] == same_second % "a"
    assert isinstance(lines[0], str)


def test_follow_returns_when_stopped_without_a_pod() -> None:
    stop = threading.Event()
    stop.set()
    assert list(follower(FakeCore()).follow(stop)) == []
