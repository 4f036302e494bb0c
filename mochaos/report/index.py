"""The run's ``index.html``: every test with its verdict, violated invariants, timeline and
artifacts, linked relative to the run folder so the folder can be archived as it is."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from mochaos.bugs import describe_bugs
from mochaos.report.summary import read_results

INDEX_FILE = "index.html"
OUTCOME_COLOURS = {"passed": "#2e7d32", "failed": "#c62828", "inconclusive": "#ef6c00",
            "error": "#6a1b9a"}  # fmt: skip


def _link(run_dir: Path, target: str | None, text: str) -> str:
    if not target:
        return ""
    try:
        rel = os.path.relpath(Path(target).resolve(), run_dir.resolve())
    except ValueError:
        rel = target
    return f'<a href="{html.escape(rel)}">{html.escape(text)}</a>'


def _row(run_dir: Path, data: dict[str, Any]) -> str:
    outcome = str(data.get("outcome", "error"))
    failed = [v["invariant"] for v in data.get("verdicts", []) if v.get("status") == "fail"]
    artifacts: dict[str, str] = data.get("artifacts") or {}
    links = [
        _link(run_dir, artifacts.get("timeline_html"), "timeline"),
        _link(run_dir, artifacts.get("timeline_md"), "timeline.md"),
        _link(run_dir, artifacts.get("history"), "history"),
        _link(run_dir, artifacts.get("operator_log"), "operator log"),
        _link(run_dir, artifacts.get("objects_at_violation"), "objects"),
    ]
    detail = ", ".join(failed) or html.escape(str(data.get("message", ""))[:160])
    colour = OUTCOME_COLOURS.get(outcome, "#333")
    retries = max((data.get("finalize_retries") or {}).values(), default=0)
    return (
        f"<tr><td>{html.escape(str(data.get('nodeid', '')))}</td>"
        f'<td style="color:{colour};font-weight:bold">{outcome}</td>'
        f"<td>{detail}</td><td>{html.escape(describe_bugs(data.get('bugs') or []))}</td>"
        f"<td>{retries}</td><td>{' · '.join(x for x in links if x)}</td></tr>"
    )


def write_index(run_dir: Path, *, title: str) -> Path:
    """Write ``run_dir/index.html`` from every test's result; return its path."""
    rows = "\n".join(_row(run_dir, d) for d in read_results(run_dir))
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}}</style>
</head><body><h1>{html.escape(title)}</h1>
<table><tr><th>test</th><th>verdict</th><th>violated invariants / reason</th><th>bugs</th>
<th>finalize retries (max)</th><th>evidence</th></tr>
{rows}
</table></body></html>
"""
    path = run_dir / INDEX_FILE
    path.write_text(page, encoding="utf-8")
    return path
