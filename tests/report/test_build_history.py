"""The history store: one record per qualification, builds added up, changes between builds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mochaos import cli
from mochaos.errors import UsageError
from mochaos.invariants.verdict import Verdict
from mochaos.report import build_history as history
from mochaos.report.qualify import qualify
from mochaos.report.result import ScenarioResult
from mochaos.report.stats import wilson_interval
from mochaos.report.summary import merge_summary, write_result

from .history_builder import Night, record_nights


def test_a_qualification_becomes_one_record(tmp_path: Path):
    store = tmp_path / "history"
    (path,) = record_nights(tmp_path, store, [Night("v1", {"test_a": ["passed", "failed"],
                                                           "test_b": ["passed"]})])  # fmt: skip
    assert path.parent == store / history.RUNS
    record = json.loads(path.read_text())
    assert record["schema"] == history.SCHEMA and record["target"] == "image:op:v1"
    assert record["build"] == "v1" and record["exit_code"] == 1
    a = record["scenarios"]["test_t.py::test_a"]
    assert a["outcomes"] == ["passed", "failed"] and a["status"] == "flaky"
    assert a["counts"]["passed"] == 1 and a["counts"]["failed"] == 1
    assert a["failed_invariants"] == ["finalizer-completes"]
    # The failed run's timeline is the one kept, copied into the store.
    assert (store / a["timeline"]).read_text() == "<html>test_a run 2 failed</html>"
    assert record["scenarios"]["test_t.py::test_b"]["failed_invariants"] == []


def test_records_of_one_build_add_up_in_first_seen_order(tmp_path: Path):
    store = tmp_path / "history"
    record_nights(tmp_path, store, [
        Night("v1", {"test_a": ["passed"]}), Night("v2", {"test_a": ["failed"]}),
        Night("v1", {"test_a": ["failed"]}),
    ])  # fmt: skip
    columns = history.builds(history.load(store))
    assert [b.build for b in columns] == ["v1", "v2"]
    assert columns[0].records == 2
    assert columns[0].cells["test_t.py::test_a"].outcomes == ["passed", "failed"]
    assert columns[0].cells["test_t.py::test_a"].status == "flaky"


def test_the_newest_build_is_judged_against_the_one_before(tmp_path: Path):
    store = tmp_path / "history"
    record_nights(tmp_path, store, [
        Night("v1", {"regress": ["passed"], "fix": ["failed"], "same": ["failed"],
                     "other": ["failed"], "gone": ["passed"]}),
        Night("v2", {"regress": ["passed", "failed", "failed"], "fix": ["passed"],
                     "same": ["failed"], "other": ["failed"], "new": ["passed"]},
              invariants={"other": "retry-budget"}),
    ])  # fmt: skip
    columns = history.builds(history.load(store))
    found = history.changes(columns)
    assert found.regressed == ["test_t.py::regress"]
    assert found.fixed == ["test_t.py::fix"]
    assert found.changed == ["test_t.py::other"]  # failing still, another invariant
    (flake,) = found.flaky
    assert (flake.scenario, flake.build, flake.failed, flake.decided) == ("test_t.py::regress",
                                                                          "v2", 2, 3)  # fmt: skip
    assert flake.interval == wilson_interval(2, 3)
    assert not history.changed_from_previous(columns, 1, "test_t.py::new")
    assert not history.changed_from_previous(columns, 1, "test_t.py::gone")


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (1, 20, 0.0089, 0.2361), (3, 3, 0.4385, 1.0)],
)
def test_wilson_intervals_match_the_published_values(k, n, low, high):
    got = wilson_interval(k, n)
    assert got == pytest.approx((low, high), abs=1e-4)


def test_wilson_refuses_impossible_counts():
    with pytest.raises(ValueError, match="0 <= successes <= trials"):
        wilson_interval(4, 3)


def test_last_good_is_the_newest_fully_passing_qualification(tmp_path: Path):
    store = tmp_path / "history"
    assert history.last_good(history.load(store)) is None
    record_nights(tmp_path, store, [
        Night("v1", {"test_a": ["passed"]}), Night("v2", {"test_a": ["passed"]}),
        Night("v3", {"test_a": ["failed"]}),
    ])  # fmt: skip
    assert history.last_good(history.load(store))["target"] == "image:op:v2"


def test_unreadable_or_newer_records_are_refused(tmp_path: Path):
    store = tmp_path / "history"
    (path,) = record_nights(tmp_path, store, [Night("v1", {"test_a": ["passed"]})])
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema": history.SCHEMA + 1}))
    with pytest.raises(UsageError, match="written by a newer mo-chaos"):
        history.load(store)
    path.write_text("{")
    with pytest.raises(UsageError, match="is unreadable"):
        history.load(store)


def test_the_history_command_prints_the_last_good_target(tmp_path: Path, capsys):
    store = tmp_path / "history"
    assert cli.main(["history", "last-good", str(store)]) == 0
    assert capsys.readouterr().out == ""
    record_nights(tmp_path, store, [Night("v1", {"test_a": ["passed"]}),
                                    Night("v2", {"test_a": ["failed"]})])  # fmt: skip
    capsys.readouterr()
    assert cli.main(["history", "last-good", str(store)]) == 0
    assert capsys.readouterr().out == "image:op:v1\n"
    assert cli.main(["history", "grid", str(store)]) == 0
    assert (store / "grid.html").is_file()


def test_qualify_appends_through_the_real_qualification_report(tmp_path: Path):
    """The record is read from what qualify() itself writes (not a hand-made report)."""

    def fake_pytest(args: list[str]) -> int:
        from mochaos.report import rundir

        reports = Path(args[args.index("--mochaos-reports-dir") + 1])
        run = rundir.create_run_dir(reports, rundir.new_run_id())
        folder = rundir.test_dir(run, "suites/test_t.py::test_a")
        (folder / "timeline.html").write_text("t")
        write_result(folder, ScenarioResult(
            nodeid="suites/test_t.py::test_a", outcome="passed",
            verdicts=[Verdict("finalizer-completes", "pass")],
            artifacts={"timeline_html": str(folder / "timeline.html")},
        ))  # fmt: skip
        merge_summary(run, meta={"operator_target": "model:fixed", "operator_version": "m1"})
        return 0

    (tmp_path / "suites").mkdir()
    qualify(operator="model:fixed", cluster="local", repeat=2, suites=tmp_path / "suites",
            out_root=tmp_path / "q", run_pytest=fake_pytest)  # fmt: skip
    (qdir,) = (tmp_path / "q").glob("qual-*")
    record = json.loads(history.append(tmp_path / "h", qdir).read_text())
    assert record["build"] == "m1" and record["exit_code"] == 0
    cell = record["scenarios"]["test_t.py::test_a"]
    assert cell["outcomes"] == ["passed", "passed"] and cell["timeline"]
