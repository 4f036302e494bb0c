"""One test's reports: the result when a scenario never produced one, and every file.

The scenario builds its result when it gives a verdict; a test that errored before
(or without) a verdict gets one here. :func:`write_test_reports` writes a test's folder
at its end: timeline, artifacts, result.json (the recorder streams the history).
"""

from __future__ import annotations

import json
from pathlib import Path

from mochaos.observe.history import History
from mochaos.observe.recorder import CLUSTER_COMPONENT
from mochaos.report.artifacts import write_artifacts, write_timeline
from mochaos.report.result import Outcome, ScenarioResult
from mochaos.report.summary import RESULT_FILE, write_result


def error_result(
    nodeid: str,
    *,
    outcome: Outcome,
    message: str,
    phase: str = "",
    operator_target: str = "",
    operator_version: str = "",
    cluster_provider: str = "",
    k8s_version: str = "",
    seed: int | None = None,
) -> ScenarioResult:
    """The result of a test that ended without a verdict (error, skip, interrupted)."""
    return ScenarioResult(
        nodeid=nodeid,
        outcome=outcome,
        operator_target=operator_target,
        operator_version=operator_version,
        cluster_provider=cluster_provider,
        k8s_version=k8s_version,
        seed=seed,
        message=message[:2000],
        phase=phase,
    )


def write_test_reports(
    folder: Path,
    result: ScenarioResult,
    *,
    history: History | None,
    namespace: str,
    operator_log: Path | None = None,
    audit_log: Path | None = None,
) -> Path:
    """Write the test's timeline, artifacts and ``result.json`` (the history itself was
    streamed by the recorder); return the result's path. Restarts of the cluster's
    processes seen during the test are added to the result's findings."""
    folder.mkdir(parents=True, exist_ok=True)
    if history is not None:
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
    return write_result(folder, result)


def cluster_findings(history: History) -> list[str]:
    """One line per restart of one of the cluster's processes recorded in the history."""
    return [m.label for m in history.markers() if m.component == CLUSTER_COMPONENT]


def add_findings(folder: Path, findings: list[str]) -> None:
    """Append teardown findings to a test's ``result.json`` (written before teardown)."""
    path = folder / RESULT_FILE
    if not findings or not path.is_file():
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    data["findings"] = [*data.get("findings", []), *findings]
    write_result(folder, ScenarioResult.from_dict(data))
