"""``grid.html`` of a history store: builds as columns, scenarios as rows (testgrid-like).

Each cell is coloured by the scenario's outcome on that build and links to its timeline;
a cell whose signature (status, violated invariants) differs from the build before is
marked, and a row is flagged when the newest build changed it. The top of the page sums
up regressed, fixed and changed scenarios and the flaky ones with a Wilson interval.
"""

from __future__ import annotations

import html
from pathlib import Path

from mochaos.report.build_history import (
    NOT_RUN,
    Build,
    Changes,
    builds,
    changed_from_previous,
    changes,
)
from mochaos.report.build_history import load as load_history
from mochaos.report.index import OUTCOME_COLOURS

GRID_FILE = "grid.html"
WINDOW = 30
"""Builds shown: the newest ones."""
STATUS_COLOURS = {
    "pass": OUTCOME_COLOURS["passed"],
    "fail": OUTCOME_COLOURS["failed"],
    "flaky": "#f9a825",
    "no verdict": OUTCOME_COLOURS["error"],
    NOT_RUN: "#e0e0e0",
}
_GLYPH = {"pass": "✓", "fail": "✗", "no verdict": "?", NOT_RUN: ""}
_BUILD_PREFIX = "matrixone-operator@"


def write_grid(history: Path, *, window: int = WINDOW) -> Path:
    """Render ``<history>/grid.html`` from every record of the store; return its path."""
    columns = builds(load_history(history))[-window:]
    path = history / GRID_FILE
    path.write_text(render(columns), encoding="utf-8")
    return path


def render(columns: list[Build]) -> str:
    """The grid page of ``columns`` (oldest build first)."""
    names = sorted({n for b in columns for n in b.cells})
    head = "".join(
        f'<th class="build" data-build="{_e(b.build)}" title="{_e(b.target)}; {b.records} '
        f'qualification(s), last {_e(b.last_seen)}">{_e(b.build.removeprefix(_BUILD_PREFIX))}'
        f"<br><small>{_e(b.last_seen[:10])}</small></th>"
        for b in columns
    )
    rows = "\n".join(_row(columns, name) for name in names)
    legend = " ".join(
        f'<span class="key" style="background:{c}{";color:#000" if s == NOT_RUN else ""}">'
        f"{_e(s)}</span>"
        for s, c in STATUS_COLOURS.items()
    )
    cells_css = "".join(
        f'td.cell[data-status="{s}"]{{background:{c}}}' for s, c in STATUS_COLOURS.items()
    )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>mo-chaos grid</title>
<style>body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse}}
th,td{{border:1px solid #fff;padding:0;font-size:13px}}
th.build{{min-width:7em;padding:4px;background:#eceff1;font-weight:normal}}
th.scenario{{text-align:left;padding:4px 8px;background:#fafafa;font-weight:normal}}
tr.flagged th.scenario{{background:#fff59d;font-weight:bold}}
td.cell{{width:7em;height:28px;text-align:center;color:#fff;font-weight:bold}}
td.cell a{{display:block;color:#fff;text-decoration:none;line-height:28px}}
td.cell.changed{{box-shadow:inset 5px 0 0 #000}}
{cells_css}
.key{{display:inline-block;padding:2px 8px;color:#fff;margin-right:4px}}
#summary h2{{font-size:1.05em;margin:.7em 0 .2em}}#summary ul{{margin:0}}
#summary li{{margin:2px 0}}</style>
</head><body><h1>mo-chaos: {len(columns)} builds, {len(names)} scenarios</h1>
{_summary(columns, changes(columns))}
<p>{legend} <span class="key" style="background:#fff;color:#000;box-shadow:inset 5px 0 0 #000">
changed from the build before</span></p>
<table id="grid"><thead><tr><th class="scenario">scenario</th>{head}</tr></thead>
<tbody>
{rows}
</tbody></table></body></html>
"""


def _row(columns: list[Build], name: str) -> str:
    flagged = bool(columns) and changed_from_previous(columns, len(columns) - 1, name)
    cells = []
    for i, b in enumerate(columns):
        cell = b.cells.get(name)
        status = cell.status if cell else NOT_RUN
        changed = " changed" if changed_from_previous(columns, i, name) else ""
        if cell is None:
            cells.append(f'<td class="cell" data-status="{NOT_RUN}" title="not run"></td>')
            continue
        decided = cell.count("passed") + cell.count("failed")
        glyph = f"{cell.count('failed')}/{decided}" if status == "flaky" else _GLYPH[status]
        runs = ", ".join(cell.outcomes)
        title = f"{status}; {', '.join(cell.failed_invariants) or 'no violation'}; runs: {runs}"
        text = f'<a href="{_e(cell.timeline)}">{glyph}</a>' if cell.timeline else glyph
        cells.append(
            f'<td class="cell{changed}" data-status="{status}" title="{_e(title)}">{text}</td>'
        )
    flag = "⚑ " if flagged else ""
    return (
        f'<tr class="row{" flagged" if flagged else ""}" data-scenario="{_e(name)}">'
        f'<th class="scenario">{flag}{_e(name)}</th>{"".join(cells)}</tr>'
    )


def _summary(columns: list[Build], found: Changes) -> str:
    if not columns:
        return '<section id="summary"><p>No qualification recorded yet.</p></section>'
    newest = columns[-1].build
    against = f" against {_e(columns[-2].build)}" if len(columns) > 1 else ""
    parts = [f'<section id="summary"><p>Newest build <b>{_e(newest)}</b>{against}:</p>']
    for kind, names in (("regressed", found.regressed), ("fixed", found.fixed),
                        ("changed", found.changed)):  # fmt: skip
        items = "".join(f"<li>{_e(n)}</li>" for n in names) or "<li>none</li>"
        parts.append(
            f'<h2 class="{kind}">{kind} ({len(names)})</h2><ul class="{kind}">{items}</ul>'
        )
    flaky = "".join(
        f"<li>{_e(f.scenario)} on {_e(f.build)}: failed {f.failed} of {f.decided} runs "
        f"({f.rate:.0%}; 95 % Wilson interval {f.interval[0]:.0%}–{f.interval[1]:.0%})</li>"
        for f in found.flaky
    )
    parts.append(f'<h2 class="flaky">flaky ({len(found.flaky)})</h2>'
                 f'<ul class="flaky">{flaky or "<li>none</li>"}</ul></section>')  # fmt: skip
    return "\n".join(parts)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)
