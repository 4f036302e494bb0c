"""Qualification aggregation, driven by a fake pytest that writes summary files."""

import json
from collections import Counter
from pathlib import Path

import pytest

from mochaos import exits
from mochaos.errors import UsageError
from mochaos.invariants.verdict import Verdict
from mochaos.report import rundir
from mochaos.report.junit import validate_junit
from mochaos.report.qualify import qualify
from mochaos.report.result import ScenarioResult
from mochaos.report.summary import merge_summary, write_result

META = {"operator_target": "model:fixed", "operator_version": "v1", "cluster_provider": "local"}
JUNIT = (
    '<testsuites><testsuite name="pytest" tests="{n}" failures="{f}" errors="0" skipped="0" '
    'time="1.0">{cases}</testsuite></testsuites>'
)


class FakePytest:
    """Plays pytest: run i gives the outcomes ``plan[i]`` (nodeid -> outcome) and ``exits[i]``.

    Runs whose index is in ``no_summary`` write no summary.json (a crashed session).
    """

    def __init__(self, plan, exits=None, *, no_summary=()):
        self.plan = plan
        self.exits = exits or [None] * len(plan)
        self.no_summary = set(no_summary)
        self.calls: list[list[str]] = []

    def __call__(self, args: list[str]) -> int:
        i = len(self.calls)
        self.calls.append(args)
        reports = Path(args[args.index("--mochaos-reports-dir") + 1])
        outcomes = self.plan[i]
        run = rundir.create_run_dir(reports, rundir.new_run_id())
        for nodeid, outcome in outcomes.items():
            status = "fail" if outcome == "failed" else "pass"
            result = ScenarioResult(
                nodeid=nodeid, outcome=outcome, verdicts=[Verdict("finalizer-completes", status)]
            )
            write_result(rundir.test_dir(run, nodeid), result)
        if i not in self.no_summary:
            merge_summary(run, meta=META)
        cases = "".join(
            f'<testcase name="{n}">' + ("<failure/>" if o == "failed" else "") + "</testcase>"
            for n, o in outcomes.items()
        )
        failures = sum(o == "failed" for o in outcomes.values())
        junit = JUNIT.format(n=len(outcomes), f=failures, cases=cases)
        Path(args[args.index("--junitxml") + 1]).write_text(junit)
        if self.exits[i] is not None:
            return self.exits[i]
        return exits.of_counts(Counter(outcomes.values()))


@pytest.fixture
def suites(tmp_path):
    path = tmp_path / "suites"
    path.mkdir()
    return path


def _qualify(tmp_path, suites, fake, repeat=None, **kw):
    out_root = tmp_path / "reports"
    code = qualify(
        operator="model:fixed",
        cluster="local",
        repeat=repeat or len(fake.plan),
        keyword=kw.pop("keyword", None),
        suites=suites,
        out_root=out_root,
        extra_args=kw.pop("extra_args", []),
        run_pytest=fake,
        after_runs=kw.pop("after_runs", None),
    )
    (qdir,) = out_root.iterdir()
    report = json.loads((qdir / "qualification.json").read_text())
    return code, qdir, report


def _by_id(report):
    return {s["nodeid"]: s for s in report["scenarios"]}


def test_all_passed_exits_0_and_passes_the_right_arguments(tmp_path, suites, capsys):
    fake = FakePytest([{"a": "passed", "b": "passed"}] * 3)
    code, qdir, report = _qualify(
        tmp_path, suites, fake, keyword="scalein", extra_args=["-x", "--time-scale=0.1"]
    )
    assert code == 0
    assert qdir.name.startswith("qual-")
    assert fake.calls[1] == [
        str(suites),
        "--operator=model:fixed",
        "--mochaos-cluster=local",
        "-k",
        "scalein",
        "--mochaos-reports-dir",
        str(qdir / "runs" / "2"),
        "--junitxml",
        str(qdir / "runs" / "2" / "junit.xml"),
        "-p",
        "no:cacheprovider",
        "-x",
        "--time-scale=0.1",
    ]
    assert {s["status"] for s in report["scenarios"]} == {"pass"}
    assert report["operator_version"] == "v1"
    out = capsys.readouterr().out
    assert "qualify: run 3/3 exit 0: 2 passed" in out


def test_one_failed_run_makes_the_scenario_flaky_and_exits_1(tmp_path, suites):
    fake = FakePytest(
        [
            {"a": "passed", "b": "passed"},
            {"a": "failed", "b": "passed"},
            {"a": "passed", "b": "error"},
        ]
    )
    code, qdir, report = _qualify(tmp_path, suites, fake)
    assert code == 1
    a, b = _by_id(report)["a"], _by_id(report)["b"]
    assert a["outcomes"] == ["passed", "failed", "passed"]
    assert (a["status"], a["pass_rate"], a["fail_rate"]) == ("flaky", 2 / 3, 1 / 3)
    assert a["failed_invariants"] == ["finalizer-completes"]
    # an infra error is counted apart, never as a failure
    assert (b["status"], b["error"], b["pass_rate"], b["fail_rate"]) == ("pass", 1, 1.0, 0.0)
    md = (qdir / "qualification.md").read_text()
    assert "| a | passed | failed | passed | flaky | 67% | 33% | finalizer-completes |" in md
    assert "| b | passed | passed | error | pass | 100% | 0% | – |" in md
    merged = qdir / "junit.xml"
    validate_junit(merged)
    assert 'name="run-2: pytest"' in merged.read_text()


@pytest.mark.parametrize(
    ("plan", "codes", "no_summary", "problem"),
    [
        ([{"a": "passed"}, {"a": "error"}], None, (), ""),
        ([{"a": "passed"}, {"a": "passed"}], [0, 3], (), "pytest exit 3, but its summary's"),
        ([{"a": "passed"}, {"a": "passed"}], [0, 2], (), "pytest exit 2 (interrupted)"),
        ([{"a": "passed"}, {"a": "passed"}], [0, 1], (), "pytest exit 1, but its summary's"),
        ([{"a": "passed"}, {"a": "passed"}], None, (1,), "no summary.json written"),
    ],
)
def test_broken_runs_exit_3(tmp_path, suites, plan, codes, no_summary, problem):
    fake = FakePytest(plan, codes, no_summary=no_summary)
    code, _, report = _qualify(tmp_path, suites, fake)
    assert code == 3
    assert report["runs"][0]["problem"] == ""
    assert report["runs"][1]["problem"].startswith(problem)


def test_runs_that_only_judged_nothing_exit_6(tmp_path, suites):
    fake = FakePytest([{"a": "passed"}, {"a": "inconclusive"}])
    code, _, report = _qualify(tmp_path, suites, fake)
    assert code == 6
    assert [r["problem"] for r in report["runs"]] == ["", ""]
    assert report["conclusion"] == "no operator failure, but some runs judged nothing"


def test_a_scenario_missing_from_a_run_is_counted_apart(tmp_path, suites):
    fake = FakePytest([{"a": "passed", "b": "passed"}, {"a": "passed"}])
    code, _, report = _qualify(tmp_path, suites, fake)
    assert code == 3
    assert _by_id(report)["b"]["outcomes"] == ["passed", "missing"]


def test_failure_wins_over_broken_runs(tmp_path, suites):
    fake = FakePytest([{"a": "failed"}, {"a": "passed"}], [1, 3])
    code, _, _ = _qualify(tmp_path, suites, fake)
    assert code == 1


def test_no_test_matched_stops_and_exits_2(tmp_path, suites):
    fake = FakePytest([{}, {}, {}], [5, 5, 5], no_summary={0, 1, 2})
    code, _, report = _qualify(tmp_path, suites, fake)
    assert code == 2
    assert len(fake.calls) == 1
    assert "pytest exit 5" in report["conclusion"]


def test_usage_errors_are_refused_before_any_run(tmp_path, suites):
    fake = FakePytest([{"a": "passed"}])
    with pytest.raises(UsageError, match="at least 1"):
        _qualify(tmp_path, suites, fake, repeat=-1)
    with pytest.raises(UsageError, match="does not exist"):
        _qualify(tmp_path, tmp_path / "nope", fake)
    assert fake.calls == []


def _swept(*left: str) -> dict:
    line = f"after model:fixed: LEFT {'; '.join(left)}" if left else "after model:fixed: clean"
    return {"left": list(left), "removed": [], "notes": [], "unchecked": "", "line": line}


def test_the_sweep_after_the_runs_is_printed_and_reported(tmp_path, suites, capsys):
    fake = FakePytest([{"a": "passed"}])
    code, qdir, report = _qualify(tmp_path, suites, fake, after_runs=lambda: _swept())
    assert code == 0 and report["after_runs"]["line"] == "after model:fixed: clean"
    assert "qualify: after model:fixed: clean" in capsys.readouterr().out
    assert "**after the runs**: after model:fixed: clean" in (qdir / "qualification.md").read_text()


def test_leftovers_make_a_passing_qualification_untrusted(tmp_path, suites):
    fake = FakePytest([{"a": "passed"}])
    code, _, report = _qualify(tmp_path, suites, fake,
                               after_runs=lambda: _swept("namespace mc-x"))  # fmt: skip
    assert code == 3, report["conclusion"]
    assert report["conclusion"].endswith("but the runs left things behind")


def test_leftovers_do_not_hide_an_operator_failure(tmp_path, suites):
    fake = FakePytest([{"a": "failed"}])
    code, _, _ = _qualify(tmp_path, suites, fake, after_runs=lambda: _swept("namespace mc-x"))
    assert code == 1
