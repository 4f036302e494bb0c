"""A scenario test's one result: made once, translated by the hooks, written once.

- :func:`conclude` makes it: the plugin's set-up and call wrappers ask for it when the
  test's body returns or raises (or its set-up broke), and the scenario the ``scenario``
  fixture stashed on the test's node concludes (settle → epilogue → verdict unless the test
  did; a body that raised stands for its outcome). A test whose scenario never started gets
  an error (or inconclusive) result from what its set-up raised.
- :func:`translate` turns it into pytest's outcome for the report (failed, skipped as
  INCONCLUSIVE, an error), so the terminal, JUnit and the exit status say what it says.
- The scenario fixture's teardown writes the folder's timeline and artifacts
  (:func:`write_folder`), the namespace's teardown adds its findings to the result, and
  :func:`write_once` writes ``result.json`` and the JUnit properties once every fixture is
  torn down. Until then the result waits with the namespace's record in the run's state
  file: a test killed during its teardown has it written by the next run's reaper.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mochaos import progress, runstate
from mochaos.config import RunConfig, run_config
from mochaos.errors import Inconclusive, MochaosError, UsageError
from mochaos.kube import Cluster
from mochaos.report.result import Outcome, ScenarioResult
from mochaos.report.rundir import create_run_dir, test_dir
from mochaos.testids import portable_nodeid

ERROR_ATTR = "mochaos_error"
"""Set on a test report whose scenario ended in an infrastructure or usage error."""
SCENARIO = pytest.StashKey[Any]()
"""On a test's node: the Scenario its ``scenario`` fixture made."""
RESULT = pytest.StashKey[ScenarioResult]()
"""On a test's node: its scenario's result, once made."""


def conclude(item: pytest.Item, raised: BaseException | None) -> None:
    """Make the test's result (once): its scenario's conclusion, or, when its scenario never
    started, what its set-up raised."""
    if RESULT in item.stash and raised is None:
        return
    sc = item.stash.get(SCENARIO, None)
    if sc is not None:
        result = sc.conclude(raised)
        runstate.keep_result(sc.namespace, result.to_dict())
    elif raised is not None and "scenario" in item.fixturenames:
        result = _unstarted(item, raised)
    else:
        return
    item.stash[RESULT] = result


def _unstarted(item: pytest.Item, raised: BaseException) -> ScenarioResult:
    """The result of a scenario test whose scenario never started (its cluster, operator or
    namespace failed, or it was skipped before)."""
    cfg = run_config(item.config)
    where = getattr(raised, "mochaos_phase", None) or progress.current_phase()
    outcome: Outcome = "error"
    if isinstance(raised, Inconclusive):
        outcome, message = "inconclusive", f"INCONCLUSIVE: {raised}"
    elif isinstance(raised, pytest.skip.Exception):
        outcome, message = "inconclusive", f"INCONCLUSIVE: skipped before it ran: {raised}"
    elif isinstance(raised, MochaosError):
        kind = "usage error" if isinstance(raised, UsageError) else "infrastructure error"
        message = f"mo-chaos {kind} in phase '{where}': {raised}"
    else:
        message = f"mo-chaos: {type(raised).__name__} in phase '{where}': {raised}"
    return ScenarioResult(
        nodeid=test_id(item), outcome=outcome, operator_target=cfg.operator,
        cluster_provider=cfg.cluster, seed=cfg.chaos_seed, message=message[:2000],
        phase=where if outcome == "error" else "", usage_error=isinstance(raised, UsageError),
    )  # fmt: skip


def translate(item: pytest.Item, report: pytest.TestReport) -> None:
    """Give a set-up or call report the outcome of the test's result, when it has one: the
    hooks only translate it."""
    result = item.stash.get(RESULT, None)
    if result is None or report.when == "teardown" or (report.when == "setup" and report.passed):
        return
    if result.outcome == "passed":
        report.outcome, report.longrepr = "passed", None
    elif result.outcome == "failed":
        report.outcome, report.longrepr = "failed", result.message
    elif result.outcome == "inconclusive":
        text = result.message if result.message.startswith("INCONCLUSIVE") else (
            f"INCONCLUSIVE: {result.message}"
        )  # fmt: skip
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, text)
    else:
        where = result.phase or "test"
        text = result.message if result.message.startswith("mo-chaos ") else (
            f"mo-chaos infrastructure error in phase '{where}': {result.message}"
        )  # fmt: skip
        report.outcome, report.longrepr = "failed", text
        setattr(report, ERROR_ATTR, where)


def write_folder(item: pytest.Item, sc: Any, cluster: Cluster, cfg: RunConfig) -> None:
    """The test folder's timeline and artifacts, from its history, before the namespace goes
    (``result.json`` waits for the teardown's findings)."""
    from mochaos.report.testreport import (  # lazy: light plugin load; pulls invariants, recorder
        write_test_reports,
    )

    result = item.stash.get(RESULT, None)
    if result is None:  # the scenario started, nothing concluded it (an interrupted run)
        conclude(item, KeyboardInterrupt("the run was interrupted"))
        result = item.stash[RESULT]
    log = progress.active()
    if log is not None:
        result.phases = log.to_list()
    write_test_reports(
        test_folder(item, cfg), result, history=sc.recorder.history(), namespace=sc.namespace,
        operator_log=sc.operator.log_path, audit_log=cluster.audit_log,
    )  # fmt: skip


def add_findings(item: pytest.Item, findings: list[str]) -> None:
    """What the namespace's teardown had to force, on the test's result."""
    result = item.stash.get(RESULT, None)
    if result is not None:
        result.findings.extend(findings)


def write_once(item: pytest.Item) -> None:
    """Write the test's ``result.json`` and put its JUnit properties on the test (once every
    fixture is torn down)."""
    from mochaos.report.junit import (  # lazy: light plugin load; pulls invariants, JUnit
        attachment_line,
        junit_properties,
    )
    from mochaos.report.summary import write_result  # lazy: light plugin load; pulls invariants

    result = item.stash.get(RESULT, None)
    if result is None:
        return
    folder = test_folder(item, run_config(item.config))
    write_result(folder, result)
    item.user_properties.extend(junit_properties(result, folder=folder))
    item.add_report_section("teardown", "stdout", attachment_line(folder))


def test_id(item: pytest.Item) -> str:
    """The test's id as reports show it: as imported (``mochaos/suites/test_x.py::test``),
    never with the folder its package is installed in."""
    return portable_nodeid(item.nodeid)


def test_folder(item: pytest.Item, cfg: RunConfig) -> Path:
    """The test's folder in the run's report folder (created with the run's folder)."""
    return test_dir(create_run_dir(cfg.reports_dir, cfg.run_id), item.nodeid)
