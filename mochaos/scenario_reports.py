"""What a scenario test leaves in the run folder, whatever its outcome.

The scenario fixture's teardown writes the test's folder (:func:`write_reports`); a scenario
whose set-up failed before the fixture started gets an error result from the plugin's
report hook (:func:`write_setup_error`). The stash keys and the report attribute here are
how the hook and the fixtures tell each other what happened.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mochaos import progress
from mochaos.config import RunConfig, run_config
from mochaos.kube import Cluster
from mochaos.report.rundir import create_run_dir, test_dir
from mochaos.testids import portable_nodeid

ERROR_ATTR = "mochaos_error"
"""Set on a test report whose call phase ended in an infrastructure or usage error."""
REPORT_KEY = pytest.StashKey[pytest.TestReport]()
SCENARIO_STARTED = pytest.StashKey[bool]()
"""Set once the scenario fixture has started: from then on its teardown writes the result."""


def write_reports(
    item: pytest.Item, sc: Any, cluster: Cluster, namespace: str, cfg: RunConfig
) -> None:
    """The one place a scenario test's folder is written."""
    from mochaos.report.junit import (  # lazy: light plugin load; pulls invariants, JUnit
        attachment_line,
        junit_properties,
    )
    from mochaos.report.testreport import (  # lazy: light plugin load; pulls invariants, recorder
        error_result,
        write_test_reports,
    )

    result = sc.result
    if result is None:
        report = item.stash.get(REPORT_KEY, None)
        result = error_result(
            test_id(item),
            outcome=outcome_of(report),
            message=longrepr_text(report),
            phase=getattr(report, ERROR_ATTR, "") or "",
            operator_target=sc.run.operator_target,
            operator_version=sc.run.operator_version,
            cluster_provider=sc.run.cluster_provider,
            k8s_version=sc.run.k8s_version,
            seed=sc.run.seed,
        )
    log = progress.active()
    if log is not None:
        result.phases = log.to_list()
    folder = test_folder(item, cfg)
    write_test_reports(
        folder, result, history=sc.recorder.history(), namespace=namespace,
        operator_log=sc.operator.log_path, audit_log=cluster.audit_log,
    )  # fmt: skip
    item.user_properties.extend(junit_properties(result, folder=folder))
    item.add_report_section("teardown", "stdout", attachment_line(folder))


def test_id(item: pytest.Item) -> str:
    """The test's id as reports show it: as imported (``mochaos/suites/test_x.py::test``),
    never with the folder its package is installed in."""
    return portable_nodeid(item.nodeid)


def test_folder(item: pytest.Item, cfg: RunConfig) -> Path:
    """The test's folder in the run's report folder (created with the run's folder)."""
    return test_dir(create_run_dir(cfg.reports_dir, cfg.run_id), item.nodeid)


def longrepr_text(report: pytest.TestReport | None) -> str:
    """A report's failure text (a skip's reason), at most 2000 characters."""
    if report is None or not report.longrepr:
        return ""
    if isinstance(report.longrepr, tuple):  # a skip: (path, line, reason)
        return str(report.longrepr[2])
    return str(report.longrepr)[:2000]


def outcome_of(report: pytest.TestReport | None) -> Any:
    """The scenario outcome a test report stands for when the scenario gave no verdict."""
    if report is None or getattr(report, ERROR_ATTR, None):
        return "error"
    if report.skipped:
        text = longrepr_text(report)
        return "inconclusive" if text.startswith("INCONCLUSIVE") else "error"
    if report.when != "call":
        return "error"
    return {"passed": "passed", "failed": "failed"}.get(report.outcome, "error")


def write_setup_error(item: pytest.Item, report: pytest.TestReport) -> None:
    """A scenario that never started still gets a result (outcome error) in the run."""
    from mochaos.report.summary import write_result  # lazy: light plugin load; pulls the invariants
    from mochaos.report.testreport import (  # lazy: light plugin load; pulls invariants, recorder
        error_result,
    )

    cfg = run_config(item.config)
    result = error_result(
        test_id(item), outcome="error", message=longrepr_text(report),
        phase=getattr(report, ERROR_ATTR, "") or progress.current_phase(),
        operator_target=cfg.operator, cluster_provider=cfg.cluster, seed=cfg.chaos_seed,
    )  # fmt: skip
    write_result(test_folder(item, cfg), result)
