"""What an exploration prints and renders: the points table, the signatures, the matrix page.

The HTML page is self-contained (inline CSS, no script): one row per point, one column
per fault, a cell per case coloured by its status and linked to its timeline; pairs and
signatures are listed below it.
"""

from __future__ import annotations

import os
from html import escape
from pathlib import Path

from mochaos.explore.plan import LEARN, Case, Exploration
from mochaos.explore.points import Point
from mochaos.explore.signatures import Signature, case_label, group

STATUSES = ("pass", "fail", "flaky", "inconclusive", "error", "unexplored")
COLOURS = {
    "pass": "#c8e6c9",
    "fail": "#ef9a9a",
    "flaky": "#ffcc80",
    "inconclusive": "#e0e0e0",
    "error": "#b39ddb",
    "unexplored": "#ffffff",
}

NONE_ROW = '<tr><td colspan="{}">none</td></tr>'


def points_table(points: list[Point]) -> str:
    """The injection points as a Markdown table: #, role, transition, first seen at."""
    lines = ["| # | role | transition | first seen at |", "|---|---|---|---:|"]
    lines += [f"| {p.id} | {p.role} | {p.transition} | +{p.first_seen:.1f} s |" for p in points]
    return "\n".join(lines)


def status_counts(exploration: Exploration) -> dict[str, int]:
    """How many cases (the learn run aside) have each status."""
    counts = dict.fromkeys(STATUSES, 0)
    for case in exploration.cases.values():
        if case.id != LEARN:
            counts[case.status] += 1
    return counts


def signatures_table(signatures: list[Signature]) -> str:
    """One row per signature: its smallest case, how many cases share it, its flake rate."""
    if not signatures:
        return "no failure signature"
    lines = [
        "| signature | smallest case | cases | reproduced | flake rate | timeline |",
        "|---|---|---:|---:|---:|---|",
    ]
    for s in signatures:
        note = (
            " (no fault needed)" if s.without_fault else (" (needs both)" if s.needs_both else "")
        )
        lines.append(
            f"| {s.signature} | {s.smallest_label}{note} | {len(s.cases)} | "
            f"{s.reproduced}/{s.runs} | {s.flake_rate:.0%} | {s.timeline or '–'} |"
        )
    return "\n".join(lines)


def summary(exploration: Exploration, signatures: list[Signature]) -> str:
    """The closing lines: counts by status, then the signatures."""
    counts = ", ".join(f"{n} {s}" for s, n in status_counts(exploration).items() if n)
    return (
        f"explore {exploration.workload} on {exploration.target.get('operator')} "
        f"({exploration.target.get('version')}): {len(exploration.points)} points; "
        f"cases: {counts or 'none'}\n{signatures_table(signatures)}"
    )


def _link(case: Case, page: Path) -> str:
    """The newest failed run's timeline (the evidence), else the newest run's; relative to
    the page when it can be."""
    runs = [r for r in case.runs if r.outcome == "failed"] or case.runs
    timeline = next((r.timeline for r in reversed(runs) if r.timeline), "")
    if not timeline:
        return ""
    try:
        return os.path.relpath(timeline, page.parent)
    except ValueError:
        return timeline


def _cell(case: Case | None, page: Path) -> str:
    if case is None:
        return '<td class="na"></td>'
    status = case.status
    text = status
    failed = [r for r in case.runs if r.outcome == "failed"]
    if failed:
        text = f"{status}: {escape(failed[-1].signature)}"
    if len(case.runs) > 1:
        text += f" ({len(case.runs)} runs)"
    link = _link(case, page)
    body = f'<a href="{escape(link)}">{text}</a>' if link else text
    return f'<td style="background:{COLOURS[status]}" title="{escape(case.id)}">{body}</td>'


def write_html(exploration: Exploration, path: Path) -> Path:
    """Write the point × fault matrix page; return its path."""
    singles = [c for c in exploration.cases.values() if len(c.steps) == 1]
    faults = list(dict.fromkeys(c.steps[0].fault.label for c in singles))
    by_cell = {(c.steps[0].point, c.steps[0].fault.label): c for c in singles}
    head = "".join(f"<th>{escape(f)}</th>" for f in faults)
    rows = []
    for p in exploration.points:
        cells = "".join(_cell(by_cell.get((p.id, f)), path) for f in faults)
        rows.append(
            f"<tr><th>{p.id}</th><td>{escape(p.role)}</td><td>{escape(p.transition)}</td>"
            f"<td>+{p.first_seen:.1f} s</td>{cells}</tr>"
        )
    pairs = [c for c in exploration.cases.values() if len(c.steps) == 2]
    pair_rows = "".join(
        f"<tr><td>{escape(case_label(exploration, c))}</td>{_cell(c, path)}</tr>" for c in pairs
    )
    sig_rows = "".join(
        f"<tr><td>{escape(s.signature)}</td><td>{escape(s.smallest_label)}"
        f"{' (needs both)' if s.needs_both else ''}</td><td>{len(s.cases)}</td>"
        f"<td>{s.reproduced}/{s.runs}</td><td>{s.flake_rate:.0%}</td></tr>"
        for s in group(exploration)
    )
    counts = ", ".join(f"{n} {s}" for s, n in status_counts(exploration).items() if n)
    learn = exploration.learn
    title = f"mo-chaos exploration: {exploration.workload} on {exploration.target.get('operator')}"
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; }}
table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
th, td {{ border: 1px solid #999; padding: 3px 6px; font-size: 12px; vertical-align: top; }}
td.na {{ background: repeating-linear-gradient(45deg, #fafafa, #fafafa 4px, #eee 4px, #eee 8px); }}
</style></head><body>
<h1>{escape(title)}</h1>
<p>target {escape(str(exploration.target))}; time scale {exploration.time_scale};
learn run {escape(str(learn.get("outcome", "?")))} in {learn.get("seconds", "?")} s,
{len(exploration.points)} points extracted in {learn.get("extract_seconds", "?")} s;
cases: {escape(counts or "none")}. A hatched cell: the fault does not apply to the point.</p>
<h2>Points × faults</h2>
<table><tr><th>#</th><th>role</th><th>transition</th><th>first seen</th>{head}</tr>
{"".join(rows)}</table>
<h2>Pairs</h2>
<table><tr><th>pair</th><th>outcome</th></tr>{pair_rows or NONE_ROW.format(2)}</table>
<h2>Signatures</h2>
<table><tr><th>signature</th><th>smallest case</th><th>cases</th><th>reproduced</th>
<th>flake rate</th></tr>{sig_rows or NONE_ROW.format(5)}</table>
</body></html>
"""
    path.write_text(page, encoding="utf-8")
    return path
