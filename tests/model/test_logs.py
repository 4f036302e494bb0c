"""Log lines are single JSON objects with the operator's keys, flushed line by line."""

from __future__ import annotations

import io
import json

from mochaos.model.logs import Logger, LogSink


def test_line_shape() -> None:
    stream = io.StringIO()
    log = Logger(LogSink(stream), controller="cn-claim-manager").with_values(
        namespace="ns", name="x"
    )
    log.info("finalize CNClaim", caller="cnclaim/controller.go:341")
    log.error("stack", caller="reconciler/reconciler.go:325", error="boom", pod="p")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert list(first)[:4] == ["level", "ts", "caller", "msg"]
    assert first["level"] == "info"
    assert first["ts"].endswith("Z") and "." in first["ts"]
    assert first["msg"] == "finalize CNClaim"
    assert (first["controller"], first["namespace"], first["name"]) == (
        "cn-claim-manager",
        "ns",
        "x",
    )
    assert second["level"] == "error" and second["error"] == "boom" and second["pod"] == "p"


def test_each_line_is_flushed() -> None:
    class Stream(io.StringIO):
        flushes = 0

        def flush(self) -> None:
            Stream.flushes += 1

    stream = Stream()
    Logger(LogSink(stream)).info("a", caller="c")
    assert Stream.flushes == 1
