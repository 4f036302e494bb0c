"""One test's report files: its timeline and artifacts, and the result of a killed test.

:func:`write_test_reports` writes a test's folder at its end: timeline, artifacts (the
recorder streams the history; ``result.json`` is written once, by the plugin, when the
test's teardown is over). :func:`write_killed` writes the result of a test whose run was
killed before it did, for the next run's reaper.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mochaos.observe.history import History
from mochaos.observe.recorder import CLUSTER_COMPONENT
from mochaos.report.artifacts import write_artifacts, write_timeline
from mochaos.report.result import ScenarioResult
from mochaos.report.summary import write_result


def write_test_reports(
    folder: Path,
    result: ScenarioResult,
    *,
    history: History,
    namespace: str,
    operator_log: Path | None = None,
    audit_log: Path | None = None,
) -> None:
    """Write the test's timeline and artifacts (the history itself was streamed by the
    recorder) and name them in its result. Restarts of the cluster's processes seen during
    the test are added to the result's findings."""
    folder.mkdir(parents=True, exist_ok=True)
    result.findings.extend(cluster_findings(history))
    meta = {
        "operator": f"{result.operator_target} ({result.operator_version})",
        "cluster": f"{result.cluster_provider} {result.k8s_version}",
        "outcome": result.outcome,
        "seed": str(result.seed),
        "namespace": namespace,
    }
    result.artifacts.update(
        write_timeline(folder, history, result.verdicts, title=result.nodeid, meta=meta)
    )
    result.artifacts.update(
        write_artifacts(
            folder, history, result.verdicts, operator_log=operator_log,
            audit_log=audit_log, namespace=namespace, failed=result.outcome != "passed",
        )
    )  # fmt: skip


def cluster_findings(history: History) -> list[str]:
    """One line per restart of one of the cluster's processes recorded in the history."""
    return [m.label for m in history.markers() if m.component == CLUSTER_COMPONENT]


def write_killed(folder: Path, kept: dict[str, Any] | None, findings: list[str]) -> None:
    """The result of a test whose run was killed before it wrote it: the result it had
    made (or an error saying it was killed before its end), with the findings of the
    teardown the reaper finished."""
    if kept is not None:
        result = ScenarioResult.from_dict(kept)
    else:
        result = ScenarioResult(
            nodeid=folder.name, outcome="error", phase="killed",
            message="the run was killed before this test ended; the next run cleaned up",
        )  # fmt: skip
    result.findings.extend(findings)
    write_result(folder, result)
