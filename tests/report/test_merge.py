"""Merging shard report folders: one summary, one index, one JUnit file, artifacts rebased."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mochaos import cli
from mochaos.errors import UsageError
from mochaos.invariants.verdict import Verdict
from mochaos.report import rundir
from mochaos.report.junit import read_junit, validate_junit
from mochaos.report.merge import merge, verdict_table
from mochaos.report.result import ScenarioResult
from mochaos.report.summary import merge_summary, write_result

CASE = '<testcase classname="suites.t" name="{name}" time="1">{body}</testcase>'
JUNIT = ('<testsuites><testsuite name="pytest" tests="{n}" failures="{f}" errors="0" '
         'skipped="0" time="2.0">{cases}</testsuite></testsuites>')  # fmt: skip


def write_shard(root: Path, outcomes: dict[str, str], *, target: str = "model:upstream") -> Path:
    """A shard's reports root as pytest leaves it: a run folder, its 'latest' link, junit.xml."""
    run = rundir.create_run_dir(root, rundir.new_run_id())
    for name, outcome in outcomes.items():
        nodeid = f"suites/test_t.py::{name}"
        folder = rundir.test_dir(run, nodeid)
        (folder / "timeline.html").write_text(f"<html>{name}</html>")
        status = "fail" if outcome == "failed" else "pass"
        result = ScenarioResult(
            nodeid=nodeid, outcome=outcome, operator_target=target, cluster_provider="local",
            verdicts=[Verdict("finalizer-completes", status), Verdict("retry-budget", status)],
            artifacts={"timeline_html": f"/runner/work/reports/x/{folder.name}/timeline.html"},
        )  # fmt: skip
        write_result(folder, result)
    merge_summary(run, meta={"operator_target": target, "cluster_provider": "local"})
    cases = "".join(CASE.format(name=n, body="<failure message='x'/>" if o == "failed" else "")
                    for n, o in outcomes.items())  # fmt: skip
    failures = sum(o == "failed" for o in outcomes.values())
    (root / "junit.xml").write_text(JUNIT.format(n=len(outcomes), f=failures, cases=cases))
    return root


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    return [
        write_shard(tmp_path / "shard-1", {"test_a": "failed", "test_b": "passed"}),
        write_shard(tmp_path / "shard-2", {"test_c": "passed"}),
    ]


def test_shards_become_one_run(tmp_path: Path, shards: list[Path]):
    out = tmp_path / "merged"
    summary = json.loads(merge(shards, out).read_text())
    assert [t["nodeid"].rsplit("::")[-1] for t in summary["tests"]] == [
        "test_a",
        "test_b",
        "test_c",
    ]
    assert summary["counts"] == {"passed": 2, "failed": 1, "inconclusive": 0, "error": 0}
    assert summary["run_id"] == "merged" and len(summary["shards"]) == 2
    assert verdict_table(out) == {
        "test_a": ("failed", ("finalizer-completes", "retry-budget")),
        "test_b": ("passed", ()), "test_c": ("passed", ()),
    }  # fmt: skip
    index = (out / "index.html").read_text()
    assert index.count("<tr><td>") == 3 and 'href="suites.test_t.test_c/timeline.html"' in index
    validate_junit(out / "junit.xml")
    cases = read_junit(out / "junit.xml")
    assert sorted(cases) == ["test_a", "test_b", "test_c"] and cases["test_a"].outcome == "failure"


def test_artifacts_point_into_the_merged_folder(tmp_path: Path, shards: list[Path]):
    out = tmp_path / "merged"
    merge(shards, out)
    for result in out.rglob("result.json"):
        timeline = Path(json.loads(result.read_text())["artifacts"]["timeline_html"])
        assert timeline == (result.parent / "timeline.html").resolve() and timeline.is_file()


def test_a_copied_latest_link_counts_once(tmp_path: Path, shards: list[Path]):
    """An artifact upload may store reports/latest as a folder: its run is the same run."""
    copied = tmp_path / "copied"
    shutil.copytree(shards[0], copied, symlinks=False)
    assert not (copied / "latest").is_symlink()
    summary = json.loads(merge([copied, shards[1]], tmp_path / "merged").read_text())
    assert len(summary["tests"]) == 3


def test_a_test_in_two_shards_is_refused(tmp_path: Path, shards: list[Path]):
    again = write_shard(tmp_path / "again", {"test_c": "failed"})
    with pytest.raises(UsageError, match=r"suites.test_t.test_c is in two shards"):
        merge([*shards, again], tmp_path / "merged")


def test_shards_of_different_targets_are_refused(tmp_path: Path, shards: list[Path]):
    other = write_shard(tmp_path / "other", {"test_d": "passed"}, target="model:fixed")
    with pytest.raises(UsageError, match="different operator_target: model:fixed, model:upstream"):
        merge([*shards, other], tmp_path / "merged")


def test_nothing_to_merge_is_the_users(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match=r"no run folder \(summary.json\)"):
        merge([tmp_path / "empty"], tmp_path / "merged")
    with pytest.raises(UsageError, match="does not exist"):
        merge([tmp_path / "absent"], tmp_path / "merged")


@pytest.mark.parametrize(
    ("outcomes", "status"),
    [({"test_a": "failed", "test_b": "error"}, 1), ({"test_a": "passed", "test_b": "error"}, 3),
     ({"test_a": "passed", "test_b": "inconclusive"}, 6), ({"test_a": "passed"}, 0)],
)  # fmt: skip
def test_the_command_exits_with_the_worst_verdict(tmp_path, capsys, outcomes, status):
    shard = write_shard(tmp_path / "s", outcomes)
    assert cli.main(["merge", str(shard), "--out", str(tmp_path / "m")]) == status
    out = capsys.readouterr().out
    assert f"merge: exit {status};" in out and "test_a" in out


def test_the_command_refuses_a_non_empty_out_folder(tmp_path, shards, capsys):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "x").write_text("")
    assert cli.main(["merge", *map(str, shards), "--out", str(tmp_path / "m")]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
