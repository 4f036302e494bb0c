"""Per-test ``result.json``, the run's ``summary.json``, and the one-line terminal summary.

Each test writes its own result file (xdist workers included); the controller
merges whatever result files exist into one summary at the end of the run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mochaos.errors import InfraError
from mochaos.report.result import ScenarioResult

RESULT_FILE = "result.json"
SUMMARY_FILE = "summary.json"
OUTCOMES = ("passed", "failed", "inconclusive", "error")


def _write_json(path: Path, data: Any) -> None:
    """Write JSON atomically, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_result(test_dir: Path, result: ScenarioResult) -> Path:
    """Write ``test_dir/result.json`` and return its path."""
    test_dir.mkdir(parents=True, exist_ok=True)
    path = test_dir / RESULT_FILE
    _write_json(path, result.to_dict())
    return path


def read_results(run_dir: Path) -> list[dict[str, Any]]:
    """Every test's result dict under ``run_dir``, sorted by node id."""
    results = []
    for path in sorted(run_dir.rglob(RESULT_FILE)):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InfraError(
                f"cannot read test result {path}: {exc}",
                hint="a worker probably crashed while writing it; re-run the test",
            ) from exc
        results.append(data)
    return sorted(results, key=lambda data: str(data.get("nodeid", "")))


def merge_summary(run_dir: Path, *, meta: dict[str, Any]) -> Path:
    """Build ``run_dir/summary.json`` from every test's ``result.json``; return its path.

    ``meta`` adds run-wide fields (operator_target, operator_version,
    cluster_provider, k8s_version). ``counts`` has every outcome, zeros included;
    ``usage_errors`` how many of the errors were the user's input's.
    """
    tests = read_results(run_dir)
    counts = dict.fromkeys(OUTCOMES, 0)
    for data in tests:
        outcome = str(data.get("outcome", "error"))
        counts[outcome] = counts.get(outcome, 0) + 1
    usage = sum(1 for data in tests if data.get("usage_error"))
    summary = {"run_id": run_dir.resolve().name, **meta, "tests": tests, "counts": counts,
               "usage_errors": usage}  # fmt: skip
    path = run_dir / SUMMARY_FILE
    _write_json(path, summary)
    return path


def _test_name(nodeid: str) -> str:
    return nodeid.rsplit("::", 1)[-1]


def terminal_line(result: ScenarioResult, timeline: Path | None) -> str:
    """One line per test: outcome, failed invariants, max finalize retries, timeline path."""
    failed = list(dict.fromkeys(v.invariant for v in result.verdicts if v.failed))
    parts = [
        f"{result.outcome.upper()} {_test_name(result.nodeid)}",
        ",".join(failed) or "-",
        f"retries.finalize.max={result.max_finalize_retries}",
    ]
    if result.outcome in ("error", "inconclusive") and result.message:
        message = " ".join(result.message.split())
        parts.append(f"({message[:117] + '...' if len(message) > 120 else message})")
    if timeline is not None:
        parts.append(str(timeline))
    return "  ".join(parts)
