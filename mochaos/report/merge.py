"""Shards into one run: ``mochaos merge <reports>…`` writes one summary, index and JUnit file.

Each argument is a shard's reports root or run folder (e.g. a CI matrix job's downloaded
artifact); its test folders are copied into the merged run folder with their artifact paths
rebased there, and its pytest JUnit files merged. Shards of one run name the same target and
cluster and share no test: anything else is refused as a usage error.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mochaos import exits
from mochaos.errors import UsageError
from mochaos.report.index import write_index
from mochaos.report.junit import merge_junit
from mochaos.report.summary import RESULT_FILE, SUMMARY_FILE, merge_summary, read_results

JUNIT_FILE = "junit.xml"
SAME_ACROSS_SHARDS = ("operator_target", "cluster_provider")
"""Summary fields every shard of one run shares."""


@dataclass(frozen=True)
class ShardRun:
    """One shard's run folder and its summary."""

    folder: Path
    summary: dict[str, Any]
    shard: Path
    """The argument it was found under."""


def find_runs(shards: list[Path]) -> list[ShardRun]:
    """Every run folder (one holding summary.json) under the shards, each once."""
    runs: dict[str, ShardRun] = {}
    for shard in shards:
        if not shard.exists():
            raise UsageError(f"{shard} does not exist", hint="give the shards' report folders")
        for path in sorted(shard.rglob(SUMMARY_FILE)):
            summary = json.loads(path.read_text(encoding="utf-8"))
            # A reports root holds each run twice when its 'latest' link was copied as a folder.
            runs.setdefault(
                str(summary.get("run_id") or path.parent.resolve()),
                ShardRun(path.parent, summary, shard),
            )
    if not runs:
        raise UsageError(
            f"no run folder ({SUMMARY_FILE}) under {', '.join(map(str, shards))}",
            hint="give the --mochaos-reports-dir folders the shards wrote",
        )
    return list(runs.values())


def merge(shards: list[Path], out: Path) -> Path:
    """Merge the shards' runs into the run folder ``out``; return its summary.json path."""
    runs = find_runs(shards)
    for key in SAME_ACROSS_SHARDS:
        values = sorted({str(r.summary.get(key, "")) for r in runs})
        if len(values) > 1:
            raise UsageError(
                f"the shards ran with different {key}: {', '.join(values)}",
                hint="merge the shards of one run only",
            )
    if out.exists() and any(out.iterdir()):
        raise UsageError(f"{out} exists and is not empty", hint="give a new folder with --out")
    out.mkdir(parents=True, exist_ok=True)
    origin: dict[str, Path] = {}
    for run in runs:
        for result in sorted(run.folder.rglob(RESULT_FILE)):
            _copy_test(result.parent, run.folder, out, origin)
    meta = {
        k: _joined(runs, k)
        for k in ("operator_target", "operator_version", "cluster_provider", "k8s_version", "seed")
    }
    meta["shards"] = [
        {
            "run_id": r.summary.get("run_id"),
            "folder": str(r.folder),
            "tests": len(r.summary.get("tests", [])),
        }
        for r in runs
    ]
    summary = merge_summary(out, meta=meta)
    write_index(out, title=f"mo-chaos merged run {out.name} — {meta['operator_target']}")
    junits = {p.resolve(): r.shard for r in runs for p in _junit_files(r.shard)}
    merge_junit(
        [(s.name, p) for p, s in junits.items()],
        out / JUNIT_FILE,
        name=f"mo-chaos {meta['operator_target']}",
        rename_cases=False,
    )
    return summary


def exit_status(summary_path: Path) -> int:
    """The merged run's status by the one table (:func:`mochaos.exits.of_summary`)."""
    return exits.of_summary(json.loads(summary_path.read_text(encoding="utf-8")))


def verdict_table(run_folder: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Per test (by name): its outcome and its violated invariants, sorted."""
    return {
        str(t["nodeid"]).rsplit("::", 1)[-1]: (
            str(t.get("outcome")),
            tuple(sorted({v["invariant"] for v in t.get("verdicts", []) if v["status"] == "fail"})),
        )
        for t in read_results(run_folder)
    }


def _copy_test(folder: Path, run_folder: Path, out: Path, origin: dict[str, Path]) -> None:
    rel = folder.relative_to(run_folder)
    if str(rel) in origin:
        raise UsageError(
            f"test folder {rel} is in two shards ({origin[str(rel)]} and {run_folder})",
            hint="merge the shards of one run only",
        )
    origin[str(rel)] = run_folder
    dest = out / rel
    shutil.copytree(folder, dest, symlinks=True)
    path = dest / RESULT_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    data["artifacts"] = {
        k: _rebased(v, folder.name, dest) for k, v in (data.get("artifacts") or {}).items()
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _rebased(written: str, folder_name: str, dest: Path) -> str:
    """An artifact path written on the shard's machine, pointed into ``dest``."""
    parts = Path(written).parts
    tail = parts[len(parts) - parts[::-1].index(folder_name) :] if folder_name in parts else ()
    moved = dest.joinpath(*tail) if tail else dest / Path(written).name
    return str(moved.resolve()) if moved.exists() else written


def _junit_files(shard: Path) -> list[Path]:
    """The shard's pytest JUnit files: ``junit.xml`` anywhere but inside a test folder."""
    return [p for p in sorted(shard.rglob(JUNIT_FILE)) if not (p.parent / RESULT_FILE).exists()]


def _joined(runs: list[ShardRun], key: str) -> str:
    return ",".join(dict.fromkeys(str(r.summary.get(key, "")) for r in runs))
