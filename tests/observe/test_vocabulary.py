"""The operator's log vocabulary: exact messages, classification, the finalize count."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from mochaos.observe import vocabulary
from mochaos.observe.history import ActionRecord, History, LogRecord
from mochaos.observe.oplog import count_retries, parse_log_line
from mochaos.observe.vocabulary import (
    MESSAGES,
    LogKind,
    classify,
    error_text,
    finalize_retries,
    is_error,
)

MODEL = Path(vocabulary.__file__).parents[1] / "model"
CONSTANTS = {
    name: value
    for name, value in vars(vocabulary).items()
    if name.isupper() and isinstance(value, str)
}


def _model_messages() -> set[str]:
    """The literal first argument of every ``….info(…)`` / ``….error(…)`` call in the model."""
    found = set()
    for path in MODEL.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("info", "error")
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.add(node.args[0].value)
    return found


def test_the_model_writes_every_message_of_the_vocabulary_exactly():
    # The model imports nothing of the framework, so it spells the messages itself.
    assert len(CONSTANTS) == len(MESSAGES) + 1  # + the controller-runtime's error line
    missing = {name: text for name, text in CONSTANTS.items() if text not in _model_messages()}
    assert missing == {}


def test_the_model_check_sees_a_misspelling():
    assert "finalize CNClaims" not in _model_messages()
    assert vocabulary.FINALIZE_ATTEMPT in _model_messages()


def _zap(line: dict) -> LogRecord:
    """A line as the real operator writes it, through the recorder's parser."""
    parsed = parse_log_line(json.dumps(line))
    assert parsed is not None
    return LogRecord(0, parsed.ts or 0.0, parsed.level, parsed.msg, parsed.namespace,
                     parsed.name, parsed.fields)  # fmt: skip


REAL = {"ts": "2026-05-30T11:24:06Z", "caller": "reconciler/reconciler.go:367"}


@pytest.mark.parametrize(
    ("msg", "kind"),
    [
        ("finalize CNClaim", LogKind.FINALIZE_ATTEMPT),
        ("does not complete finalizing, retry", LogKind.FINALIZE_UNFINISHED),
        ("resource finalizing complete, remove finalizer", LogKind.FINALIZE_DONE),
        ("finalize CNClaim, reclaim bound CN", LogKind.FINALIZE_RECLAIM),
        ("skip reclaim, pod still claimed by other CNClaim", LogKind.FINALIZE_SKIP),
        ("start bind cn claim", LogKind.BIND),
        ("migrate claimed pod", LogKind.MIGRATE),
        ("sort claims to scale-in", LogKind.SCALE_IN_SORT),
        ("object is synced, reconcile will be triggered on next change or resync",
         LogKind.SYNCED),
        ("finalize CNClaim ", LogKind.OTHER),
        ("Finalize CNClaim", LogKind.OTHER),
    ],
)  # fmt: skip
def test_info_lines_are_classified_by_their_exact_message(msg, kind):
    line = _zap({"level": "info", **REAL, "msg": msg, "namespace": "ns", "name": "x"})
    assert classify(line) is kind
    assert not is_error(line)


def test_error_lines_are_classified_by_level_not_by_their_stack_message():
    stack = (
        "*errors.errorString store not found in cache: 4f1c\n"
        "/go/pkg/mod/github.com/matrixorigin/controller-runtime/pkg/reconciler/reconciler.go:361"
    )
    error = "store not found in cache: 4f1c"
    line = _zap({"level": "error", **REAL, "msg": stack, "namespace": "ns", "name": "x",
                 "error": error, "stacktrace": "goroutine 1"})  # fmt: skip
    assert is_error(line)
    assert classify(line) is LogKind.ERROR
    assert error_text(line) == "store not found in cache: 4f1c"
    assert "stacktrace" not in line.fields
    # The stack message may name a known message; the level decides.
    named = _zap({"level": "ERROR", "ts": 1780140246.5, "msg": "finalize CNClaim\nstack"})
    assert classify(named) is LogKind.ERROR
    assert error_text(named) == "finalize CNClaim"
    assert (named.t, named.level) == (1780140246.5, "ERROR")


@pytest.mark.parametrize("level", ["error", "dpanic", "panic", "fatal", "Error"])
def test_error_levels(level):
    assert is_error(_zap({"level": level, "msg": "m"}))


@pytest.mark.parametrize("level", ["info", "debug", "warn", "Level(-4)"])
def test_levels_below_error(level):
    assert not is_error(_zap({"level": level, "msg": "m"}))


def test_errors_of_an_unreachable_apiserver_are_the_infrastructures():
    refused = 'Get "https://127.0.0.1:6443/api": dial tcp 127.0.0.1:6443: connection refused'
    line = _zap({"level": "error", "msg": "Reconciler error", "name": "s1", "error": refused})
    assert classify(line) is LogKind.UNREACHABLE
    info = _zap({"level": "info", "msg": "error keep bound CN working", "error": refused})
    assert classify(info) is LogKind.KEEP_BOUND_ERROR


def test_finalize_retries_count_every_pass_of_each_claim():
    def line(msg: str, name: str, level: str = "info") -> LogRecord:
        return LogRecord(0, 0.0, level, msg, "ns", name)

    lines = [
        line("finalize CNClaim", "x"),
        line("does not complete finalizing, retry", "x"),
        line("finalize CNClaim", "x"),
        line("resource finalizing complete, remove finalizer", "x"),
        line("finalize CNClaim", "y"),
        line("does not complete finalizing, retry", "claimset-s1"),
        line("finalize CNClaim, reclaim bound CN", "y"),
        line("finalize CNClaim\nstack", "z", level="error"),
        line("finalize CNClaim", ""),
    ]
    assert finalize_retries(lines) == {"x": 2, "y": 1}


def test_count_retries_gives_the_finalize_count_and_the_agents_patches():
    def patch(seq: int, error: str | None = None) -> ActionRecord:
        return ActionRecord(seq, 1.0, "request_migration", "CNClaim", "x", error=error)

    history = History(
        [
            LogRecord(1, 1.0, "info", "finalize CNClaim", "ns", "x"),
            LogRecord(2, 3.0, "info", "finalize CNClaim", "ns", "x"),
            patch(3),
            patch(4),
            patch(5, error="409 Conflict"),
            patch(6),
        ]
    )
    counts = count_retries(history)
    assert counts.finalize == {"x": 2}
    assert counts.migration_requests == {"x": 3}
    assert counts.agent_migration_retries == 2
