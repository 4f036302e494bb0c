"""Side by side: the same scenarios qualified against several operator targets.

Used to hold the reference model against the code it models (``model:upstream`` vs
``source:<checkout>@<commit>``) or one build against another: per scenario, each
target's verdict, violated invariants, finalize retries and time to verdict, so
every difference is visible in one table.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any


def _name(nodeid: str) -> str:
    return nodeid.rsplit("::", 1)[-1]


def _cell(scenario: dict[str, Any] | None) -> dict[str, Any]:
    if scenario is None:
        return {"verdict": "not run", "invariants": [], "retries": None, "seconds": None}
    durations = scenario.get("durations") or []
    retries = scenario.get("finalize_retries") or []
    return {
        "verdict": scenario["status"],
        "invariants": scenario.get("failed_invariants") or [],
        "retries": max(retries) if retries else None,
        "seconds": statistics.median(durations) if durations else None,
    }


def compare(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The comparison of qualification reports (``qualification.json`` contents)."""
    targets = [r["operator"] for r in reports]
    names = sorted({_name(s["nodeid"]) for r in reports for s in r["scenarios"]})
    rows = []
    for name in names:
        cells = {}
        for r in reports:
            found = next((s for s in r["scenarios"] if _name(s["nodeid"]) == name), None)
            cells[r["operator"]] = _cell(found)
        verdicts = {(c["verdict"], tuple(c["invariants"])) for c in cells.values()}
        rows.append({"scenario": name, "targets": cells, "same": len(verdicts) == 1})
    swept = [(r.get("after_runs") or {}).get("line") for r in reports]
    return {"targets": targets, "rows": rows, "between": [line for line in swept if line]}


def markdown(table: dict[str, Any]) -> str:
    """The comparison as a Markdown table (one row per scenario, one column per target)."""
    targets = table["targets"]
    lines = [
        "# Side by side: " + " vs ".join(targets),
        "",
        "Per target: verdict; violated invariants; finalize retries (max); seconds to verdict "
        "(median).",
        "",
        "| scenario | " + " | ".join(targets) + " | same? |",
        "|---|" + "---|" * len(targets) + "---|",
    ]
    for row in table["rows"]:
        cells = []
        for t in targets:
            c = row["targets"][t]
            inv = ", ".join(c["invariants"]) or "–"
            retries = "–" if c["retries"] is None else str(c["retries"])
            secs = "–" if c["seconds"] is None else f"{c['seconds']:.0f}s"
            cells.append(f"{c['verdict']}; {inv}; {retries}; {secs}")
        lines.append(f"| {row['scenario']} | " + " | ".join(cells)
                     + f" | {'yes' if row['same'] else '**no**'} |")  # fmt: skip
    if table.get("between"):
        lines += ["", "Between targets (one cluster, targets one after another):", ""]
        lines += [f"- {line}" for line in table["between"]]
    return "\n".join(lines) + "\n"


def write(out: Path, reports: list[dict[str, Any]]) -> Path:
    """Write ``comparison.md`` and ``comparison.json`` into ``out``; return the Markdown."""
    table = compare(reports)
    out.mkdir(parents=True, exist_ok=True)
    (out / "comparison.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    path = out / "comparison.md"
    path.write_text(markdown(table), encoding="utf-8")
    return path
