"""One child pytest run read back: its exit status, its summary.json (or why there is none)
and its JUnit cases; a stand-in runner replaces the process (unit, marked: they call
run_pytest), but in one real child (e2e)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mochaos.report.child_pytest import pytest_command, reports_options, run_pytest

JUNIT = """<testsuites><testsuite name="pytest" tests="1">
<testcase classname="suites.test_race" name="test_seed" time="1.0"/>
</testsuite></testsuites>
"""


def _writes(summary: str | None, code: int, junit: bool = False):
    calls: list[list[str]] = []

    def runner(args: list[str]) -> int:
        calls.append(args)
        reports = Path(args[args.index("--mochaos-reports-dir") + 1])
        if summary is not None:
            (reports / "latest").mkdir(parents=True)
            (reports / "latest" / "summary.json").write_text(summary)
        if junit:
            Path(args[args.index("--junitxml") + 1]).write_text(JUNIT)
        return code

    return runner, calls


@pytest.mark.unit
def test_the_command_is_this_interpreters_pytest():
    assert pytest_command(["suites", "-k", "x"]) == [sys.executable, "-m", "pytest", "suites",
                                                     "-k", "x"]  # fmt: skip


def test_the_reports_options_name_the_folder_and_its_junit_file(tmp_path: Path):
    assert reports_options(tmp_path) == [
        "--mochaos-reports-dir", str(tmp_path), "--junitxml", str(tmp_path / "junit.xml"),
    ]  # fmt: skip
    assert reports_options(tmp_path, tmp_path / "j.xml")[-1] == str(tmp_path / "j.xml")


@pytest.mark.unit
def test_a_run_gives_its_exit_status_summary_and_junit_cases(tmp_path: Path):
    runner, calls = _writes(json.dumps({"tests": [{"nodeid": "a"}]}), 1, junit=True)
    args = ["suites", *reports_options(tmp_path)]
    run = run_pytest(args, reports_dir=tmp_path, junit=tmp_path / "junit.xml", runner=runner)
    assert calls == [args]
    assert run.exit_code == 1
    assert run.summary == {"tests": [{"nodeid": "a"}]} and run.why_no_summary == ""
    assert list(run.cases) == ["test_seed"] and run.case("test_seed").outcome == "passed"


@pytest.mark.unit
def test_no_summary_and_an_unreadable_one_say_why(tmp_path: Path):
    runner, _ = _writes(None, 3)
    run = run_pytest(reports_options(tmp_path / "a"), reports_dir=tmp_path / "a", runner=runner)
    assert (run.exit_code, run.summary, run.why_no_summary) == (3, None, "no summary.json written")
    runner, _ = _writes("{half", 1)
    run = run_pytest(reports_options(tmp_path / "b"), reports_dir=tmp_path / "b", runner=runner)
    assert run.summary is None and run.why_no_summary.startswith("unreadable summary.json: ")


@pytest.mark.e2e
def test_a_real_child_runs_to_its_end_with_its_output_kept(tmp_path: Path):
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    reports = tmp_path / "reports"
    run = run_pytest(
        ["test_one.py", "-p", "no:cacheprovider", "-q", *reports_options(reports)],
        reports_dir=reports, junit=reports / "junit.xml", cwd=tmp_path, capture=True,
        timeout=120,
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    assert " passed" in run.stdout.strip().splitlines()[-1]
    assert list(run.cases) == ["test_one"]
    logged = run_pytest(
        ["test_one.py", "-p", "no:cacheprovider", "-q", *reports_options(tmp_path / "again")],
        reports_dir=tmp_path / "again", cwd=tmp_path, log=tmp_path / "child.log", timeout=120,
    )  # fmt: skip
    assert logged.exit_code == 0 and logged.output == ""
    assert " passed" in (tmp_path / "child.log").read_text().strip().splitlines()[-1]


LONG_TEST = """
import os, pathlib, time
import pytest

@pytest.fixture
def owned():
    pathlib.Path(os.environ["MARK"]).write_text(str(os.getpid()))
    yield
    pathlib.Path(os.environ["MARK"] + ".teardown").write_text("done")

def test_long(owned):
    time.sleep(120)
"""

PARENT = """
import sys
from pathlib import Path
from mochaos.report.child_pytest import run_pytest
try:
    run_pytest([sys.argv[1], "-q", "-p", "no:cacheprovider", "-p", "no:mochaos"],
               reports_dir=Path(sys.argv[2]))
except KeyboardInterrupt:
    sys.exit(130)
sys.exit(0)
"""


@pytest.mark.e2e
def test_a_terminated_parent_lets_its_child_tear_down_then_stops(tmp_path: Path):
    """A CI job's timeout sends SIGTERM to `mochaos qualify` or `explore` only: their child
    pytest is asked to stop (SIGINT) and tears its tests down before the parent exits, instead
    of running on alone with the operators it started."""
    import os
    import signal
    import subprocess
    import time

    (tmp_path / "test_long.py").write_text(LONG_TEST)
    (tmp_path / "parent.py").write_text(PARENT)
    mark = tmp_path / "child"
    env = {**os.environ, "MARK": str(mark)}
    parent = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"),
                               str(tmp_path / "test_long.py"), str(tmp_path / "reports")],
                              cwd=tmp_path, env=env)  # fmt: skip
    deadline = time.monotonic() + 60
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert mark.exists(), "the child test never started"
    child = int(mark.read_text())
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=60) == 130
    assert (tmp_path / "child.teardown").read_text() == "done"
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
