"""``python -m mochaos check``: a saved history re-judged with the run's options."""

from __future__ import annotations

import gzip
import json
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from mochaos.cli import main
from mochaos.config import CheckOptions
from mochaos.invariants import ALL
from mochaos.observe.history import History, LogRecord
from mochaos.report.result import ScenarioResult

DATA = Path(__file__).with_name("data")
CAPTURED = "seed_upstream_captured"
"""A real run of the seed scenario on model:upstream at --time-scale 0.2."""


def _captured(folder: Path, *, options: bool = True) -> Path:
    """The captured run laid out as a report folder: history.jsonl.gz and result.json."""
    history = folder / "history.jsonl.gz"
    shutil.copy(DATA / f"{CAPTURED}.history.jsonl.gz", history)
    result = json.loads((DATA / f"{CAPTURED}.case.json").read_text(encoding="utf-8"))["result"]
    if options:
        result["check_options"] = asdict(CheckOptions.from_operator_time(time_scale=0.2))
    (folder / "result.json").write_text(json.dumps(result), encoding="utf-8")
    return history


def _expected() -> dict[str, str]:
    case = json.loads((DATA / f"{CAPTURED}.case.json").read_text(encoding="utf-8"))
    return {v.invariant: v.status for v in ScenarioResult.from_dict(case["result"]).verdicts}


def _lines(out: str) -> dict[str, str]:
    return {line.split()[1].rstrip(":"): line for line in out.splitlines()}


def test_the_run_s_verdicts_come_back_with_the_run_s_options(tmp_path, capsys):
    assert main(["check", str(_captured(tmp_path))]) == 1
    out, err = capsys.readouterr()
    lines = _lines(out)
    status = {"PASS": "pass", "FAIL": "fail", "SKIP": "skipped"}
    expected = _expected()  # the invariants of the captured run; any added later are extra
    assert {k: status[v.split()[0]] for k, v in lines.items() if k in expected} == expected
    assert lines["scalein-skips-migrating"].startswith(
        "FAIL scalein-skips-migrating [B2,B6] at +17.8s (seq 364): CNClaim s1-5wz9j deleted"
    )
    assert lines["scalein-skips-migrating"].endswith("CNClaim/s1-lgxbx)")
    assert lines["single-binding"].startswith("PASS single-binding: no operator write")
    assert "time_scale=0.2" in err and "result.json" in err


def test_command_line_options_override_the_run_s(tmp_path, capsys):
    history = _captured(tmp_path)
    assert main(["check", str(history), "--migration-timeout", "600"]) == 1
    out, err = capsys.readouterr()
    assert _lines(out)["migration-completes"].startswith("PASS")
    assert "overridden: migration_timeout=600" in err and "migration_timeout=120 " in err
    main(["check", str(history), "--time-scale", "1", "--retry-budget", "200"])
    out, _ = capsys.readouterr()
    assert _lines(out)["retry-budget"].startswith("PASS")
    # At the model's own pace the finalize deadline is 60 s: the stuck claim went in 36 s.
    assert _lines(out)["finalizer-completes"].startswith("PASS")
    assert _lines(out)["scalein-skips-migrating"].startswith("FAIL")


def test_without_recorded_options_the_run_defaults_apply(tmp_path, capsys):
    history = _captured(tmp_path, options=False)
    main(["check", str(history)])
    _, err = capsys.readouterr()
    assert "(from the run options' defaults (result.json names none))" in err
    (tmp_path / "result.json").unlink()
    main(["check", str(history)])
    _, err = capsys.readouterr()
    assert "time_scale=1 " in err and "result.json not found" in err


def test_a_history_where_every_invariant_holds_exits_0(tmp_path, capsys):
    path = tmp_path / "history.jsonl"
    History([LogRecord(0, 1.0, "info", "object is synced", "ns", "x")]).to_jsonl(path)
    assert main(["check", str(path)]) == 0
    out, _ = capsys.readouterr()
    assert len(out.splitlines()) == len(ALL)
    assert {line.split()[0] for line in out.splitlines()} == {"PASS", "SKIP"}


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("missing.jsonl", None, "does not exist"),
        ("history.jsonl", b"not json\n", "is not a mo-chaos history (JSONDecodeError"),
        ("history.jsonl", b'{"type": "nope"}\n', "is not a mo-chaos history (KeyError"),
        ("history.jsonl", b'{"type": "log", "seq": 1}\n', "is not a mo-chaos history (TypeError"),
        ("history.jsonl.gz", b"plain bytes", "is not a mo-chaos history (BadGzipFile"),
        ("history.jsonl", b"\n", "holds no entries"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, name, content, says):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    assert main(["check", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and says in err


def test_a_garbled_result_json_is_bad_input(tmp_path, capsys):
    history = _captured(tmp_path)
    (tmp_path / "result.json").write_text('{"check_options": {"grace": -1}}')
    assert main(["check", str(history)]) == 2
    assert "invariant option grace=-1 is negative" in capsys.readouterr().err
    (tmp_path / "result.json").write_text('{"check_options": {"speed": 1}}')
    assert main(["check", str(history)]) == 2
    assert "is not a mo-chaos test result (TypeError" in capsys.readouterr().err
    assert main(["check", str(history), "--time-scale", "0"]) == 2
    with gzip.open(history, "rt") as fh:
        assert fh.readline()  # the history itself was fine
