"""The timeline as one self-contained HTML page: swimlanes over time plus the table.

One lane per claim and per pod, coloured by claim state or pod phase label;
actions of mo-chaos are vertical markers, violations red markers and outlines.
Inline CSS and SVG only, no external assets; a short script stamps
``data-lanes-rendered`` on <body> after layout so a headless browser can check it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from mochaos.ctrl.objects import CLAIMED_BY_LABEL, PHASE_LABEL, deleting, labels_of
from mochaos.faults import of_action
from mochaos.invariants.verdict import Verdict, Violation
from mochaos.observe.history import History
from mochaos.report.timeline import (
    TimelineRow,
    build_rows,
    normalise_ref,
    object_ref,
    utc_clock,
)

COLOURS = {
    "New": "#cfd8dc",
    "Pending": "#b0bec5",
    "Bound": "#66bb6a",
    "Migrating": "#29b6f6",
    "Deleting": "#ff7043",
    "Lost": "#e53935",
    "Outdated": "#ffa726",
    "Unknown": "#cfd8dc",
    "Idle": "#90caf9",
    "Draining": "#ffca28",
    "Terminating": "#8d6e63",
    "none": "#eeeeee",
}

WIDTH = 1200
LEFT = 170
RIGHT = 30
LANE_H = 22
LANE_GAP = 6
LABEL_ROW_H = 14
MAX_LABEL = 48
CHAR_W = 6.4
AXIS_H = 22


@dataclass
class Segment:
    """A stretch of time in one state."""

    start: float
    end: float
    state: str
    label: str


@dataclass
class Lane:
    """One swimlane: an object and its segments."""

    ref: str
    segments: list[Segment] = field(default_factory=list)
    retries: list[float] = field(default_factory=list)
    violated_from: float | None = None


def _claim_state(obj: dict[str, Any]) -> tuple[str, str]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    pod = spec.get("podName") or ""
    source = (spec.get("sourcePod") or {}).get("podName") or ""
    if deleting(obj):
        return "Deleting", pod
    if source:
        return "Migrating", f"{source}→{pod}"
    return status.get("phase") or "New", pod


def _pod_state(obj: dict[str, Any]) -> tuple[str, str]:
    labels = labels_of(obj)
    holder = labels.get(CLAIMED_BY_LABEL, "")
    label = f"by {holder}" if holder else ""
    if deleting(obj):
        return "Deleting", label
    return labels.get(PHASE_LABEL) or "none", label


def build_lanes(history: History) -> list[Lane]:
    """Claim lanes, then pod lanes, each in order of first appearance."""
    lanes: dict[tuple[str, str], Lane] = {}
    open_segments: dict[tuple[str, str], Segment] = {}
    for change in history.changes():
        state_of = {"CNClaim": _claim_state, "Pod": _pod_state}.get(change.kind)
        if state_of is None:
            continue
        key = (change.kind, change.name)
        lane = lanes.setdefault(key, Lane(ref=object_ref(change.kind, change.name)))
        current = open_segments.get(key)
        state, label = ("", "") if change.event == "DELETED" else state_of(change.obj)
        if current is not None and (current.state, current.label) == (state, label):
            continue
        if current is not None:
            current.end = change.t
            del open_segments[key]
        if state:
            open_segments[key] = Segment(change.t, change.t, state, label)
            lane.segments.append(open_segments[key])
    for segment in open_segments.values():
        segment.end = history.end
    for action in history.actions("request_migration"):
        lane = lanes.get(("CNClaim", action.name))
        if lane is not None:
            lane.retries.append(action.t)
    ordered = [lane for (kind, _), lane in lanes.items() if kind == "CNClaim"]
    ordered += [lane for (kind, _), lane in lanes.items() if kind == "Pod"]
    return ordered


class _Canvas:
    """Maps times to x coordinates and collects SVG elements."""

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.span = max(end - start, 1.0)
        self.parts: list[str] = []

    def x(self, t: float) -> float:
        return LEFT + (t - self.start) / self.span * (WIDTH - LEFT - RIGHT)

    def add(self, text: str) -> None:
        self.parts.append(text)


@dataclass
class _Marker:
    """A labelled vertical line; ``row`` and ``x_text`` are set by :func:`_place`."""

    t: float
    text: str
    css: str
    row: int = 0
    x_text: float = 0.0
    anchor_end: bool = False

    @property
    def short(self) -> str:
        return self.text if len(self.text) <= MAX_LABEL else self.text[: MAX_LABEL - 1] + "…"


def _place(canvas: _Canvas, markers: list[_Marker]) -> int:
    """Give each label the first row where it does not overlap; returns the row count."""
    row_ends: list[float] = []
    for marker in sorted(markers, key=lambda m: m.t):
        x = canvas.x(marker.t)
        width = CHAR_W * len(marker.short)
        marker.anchor_end = x + 3 + width > WIDTH
        marker.x_text = x - 3 if marker.anchor_end else x + 3
        left = marker.x_text - width if marker.anchor_end else marker.x_text
        row = next((i for i, e in enumerate(row_ends) if e + 6 < left), len(row_ends))
        if row == len(row_ends):
            row_ends.append(0.0)
        row_ends[row] = left + width
        marker.row = row
    return len(row_ends)


def _tick_step(span: float) -> float:
    for step in (0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600):
        if span / step <= 12:
            return step
    return span / 12


def _axis(canvas: _Canvas, top: float, bottom: float) -> None:
    step = _tick_step(canvas.span)
    n = 0
    while n * step <= canvas.span + 1e-9:
        x = canvas.x(canvas.start + n * step)
        canvas.add(
            f'<line class="grid" x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{bottom:.1f}"/>'
        )
        canvas.add(f'<text class="tick" x="{x:.1f}" y="{top - 6:.1f}">+{n * step:g} s</text>')
        n += 1


def _draw_marker(canvas: _Canvas, marker: _Marker, bottom: float) -> None:
    x = canvas.x(marker.t)
    y = 12 + marker.row * LABEL_ROW_H
    anchor = ' text-anchor="end"' if marker.anchor_end else ""
    canvas.add(
        f'<g class="{marker.css}"><title>{escape(marker.text)}</title>'
        f'<line x1="{x:.1f}" y1="{y + 2:.1f}" x2="{x:.1f}" y2="{bottom:.1f}"/>'
        f'<text x="{marker.x_text:.1f}" y="{y:.1f}"{anchor}>{escape(marker.short)}</text></g>'
    )


def _lane(canvas: _Canvas, lane: Lane, y: float, start: float) -> None:
    canvas.add(f'<g class="lane" data-lane="{escape(lane.ref)}">')
    canvas.add(
        f'<text class="lane-label" x="{LEFT - 8}" y="{y + 15:.1f}">{escape(lane.ref)}</text>'
    )
    canvas.add(
        f'<rect class="lane-bg" x="{LEFT}" y="{y:.1f}" width="{WIDTH - LEFT - RIGHT}" '
        f'height="{LANE_H}"/>'
    )
    for seg in lane.segments:
        x0, x1 = canvas.x(seg.start), canvas.x(seg.end)
        width = max(x1 - x0, 1.0)
        colour = COLOURS.get(seg.state, "#bdbdbd")
        tip = (
            f"{lane.ref}: {seg.state} {seg.label} ({seg.start - start:.1f}–{seg.end - start:.1f} s)"
        )
        canvas.add(
            f'<rect class="seg" data-state="{escape(seg.state)}" x="{x0:.1f}" y="{y:.1f}" '
            f'width="{width:.1f}" height="{LANE_H}" fill="{colour}">'
            f"<title>{escape(tip)}</title></rect>"
        )
        text = f"{seg.state} {seg.label}".strip()
        if width > 7 * len(text):
            canvas.add(
                f'<text class="seg-text" x="{x0 + 4:.1f}" y="{y + 15:.1f}">{escape(text)}</text>'
            )
    for t in lane.retries:
        x = canvas.x(t)
        canvas.add(f'<line class="retry" x1="{x:.1f}" y1="{y:.1f}" x2="{x:.1f}" y2="{y + 6:.1f}"/>')
    if lane.violated_from is not None:
        x0 = canvas.x(lane.violated_from)
        canvas.add(
            f'<rect class="violated" x="{x0:.1f}" y="{y - 1:.1f}" '
            f'width="{max(WIDTH - RIGHT - x0, 2.0):.1f}" height="{LANE_H + 2}"/>'
        )
    canvas.add("</g>")


def _markers(history: History, violations: list[tuple[str, Violation]]) -> list[_Marker]:
    markers = []
    first_attempt: set[str] = set()
    for action in history.actions():
        if action.action == "request_migration":
            if action.name in first_attempt:
                continue  # retries are ticks on the claim's lane
            first_attempt.add(action.name)
        target = object_ref(action.kind, action.name) if action.name else "operator"
        fault = of_action(action.action, action.fault)
        what = fault.render({**fault.defaults, **action.params}, None) if fault else action.action
        markers.append(_Marker(action.t, f"⚡ {what} {target}", "action"))
    markers += [_Marker(m.t, m.label, "scenario-marker") for m in history.markers()]
    markers += [_Marker(e.t, e.text(), "scenario-marker") for e in history.period_edges()]
    markers += [
        _Marker(v.t, f"✗ {invariant}: {v.message}", "violation") for invariant, v in violations
    ]
    return markers


def render_svg(history: History, verdicts: Sequence[Verdict]) -> str:
    """The swimlane diagram as an inline <svg> element."""
    lanes = build_lanes(history)
    by_ref = {lane.ref: lane for lane in lanes}
    violations = [(v.invariant, v.violation) for v in verdicts if v.failed and v.violation]
    for _, violation in violations:
        for ref in violation.objects:
            lane = by_ref.get(normalise_ref(ref))
            if lane is None:
                continue
            if lane.violated_from is None or violation.t < lane.violated_from:
                lane.violated_from = violation.t
    canvas = _Canvas(history.start, history.end)
    markers = _markers(history, violations)
    top = max(_place(canvas, markers), 1) * LABEL_ROW_H + AXIS_H + 8
    bottom = top + len(lanes) * (LANE_H + LANE_GAP)
    _axis(canvas, top - 4, bottom)
    for i, lane in enumerate(lanes):
        _lane(canvas, lane, top + i * (LANE_H + LANE_GAP), history.start)
    for marker in markers:
        _draw_marker(canvas, marker, bottom)
    return (
        f'<svg class="swimlanes" viewBox="0 0 {WIDTH} {int(bottom + 10)}" width="100%" '
        f'data-lanes="{len(lanes)}" role="img" aria-label="swimlanes">'
        + "".join(canvas.parts)
        + "</svg>"
    )


_CSS = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px 24px; color: #212121; }
h1 { font-size: 18px; margin: 0 0 8px; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; margin: 0 0 12px; }
dl.meta dt { font-weight: 600; }
dl.meta dd { margin: 0; }
.legend span { display: inline-block; margin-right: 10px; }
.legend i { display: inline-block; width: 12px; height: 12px; margin-right: 3px; }
svg.swimlanes { display: block; margin: 8px 0 16px; }
svg text { font: 11px system-ui, sans-serif; fill: #212121; }
svg .tick { text-anchor: middle; fill: #616161; }
svg .grid { stroke: #e0e0e0; }
svg .lane-label { text-anchor: end; font-weight: 600; }
svg .lane-bg { fill: #fafafa; stroke: #e0e0e0; }
svg .seg { stroke: #ffffff; stroke-width: 0.5; }
svg .retry { stroke: #0d47a1; stroke-width: 1; }
svg .violated { fill: none; stroke: #d50000; stroke-width: 2; }
svg .action line { stroke: #6a1b9a; stroke-dasharray: 4 3; }
svg .action text { fill: #6a1b9a; font-weight: 600; }
svg .scenario-marker line { stroke: #9e9e9e; stroke-dasharray: 1 3; }
svg .scenario-marker text { fill: #757575; }
svg .violation line { stroke: #d50000; stroke-width: 1.5; }
svg .violation text { fill: #d50000; font-weight: 600; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #eeeeee; padding: 3px 6px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.action td { background: #f3e5f5; font-weight: 600; }
tr.violation td { background: #ffebee; color: #b71c1c; font-weight: 600; }
"""

_SCRIPT = """
(function () {
  var drawn = 0, segments = 0;
  document.querySelectorAll("svg.swimlanes .lane-bg").forEach(function (r) {
    var box = r.getBoundingClientRect();
    if (box.width > 0 && box.height > 0) { drawn += 1; }
  });
  document.querySelectorAll("svg.swimlanes rect.seg").forEach(function (r) {
    if (r.getBoundingClientRect().width > 0) { segments += 1; }
  });
  document.body.setAttribute("data-lanes-rendered", String(drawn));
  document.body.setAttribute("data-segments-rendered", String(segments));
})();
"""


def _table(rows: Sequence[TimelineRow]) -> str:
    out = [
        "<table><thead><tr><th>time (UTC)</th><th>+s</th><th>component</th>"
        "<th>object</th><th>event</th></tr></thead><tbody>"
    ]
    for row in rows:
        css = "action" if row.action else "violation" if row.violation else ""
        mark = "⚡ " if row.action else "✗ " if row.violation else ""
        out.append(
            f'<tr class="{css}"><td>{utc_clock(row.t)}</td><td class="num">{row.offset:.1f}</td>'
            f"<td>{escape(row.component)}</td><td>{escape(row.object)}</td>"
            f"<td>{mark}{escape(row.event)}</td></tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def _legend() -> str:
    items = "".join(
        f'<span><i style="background:{colour}"></i>{escape(state)}</span>'
        for state, colour in COLOURS.items()
    )
    return f'<p class="legend">{items}</p>'


def render_html(
    history: History, verdicts: Sequence[Verdict], *, title: str, meta: dict[str, str]
) -> str:
    """One self-contained HTML page: metadata, swimlanes, and the timeline table."""
    meta_html = "".join(
        f"<dt>{escape(str(k))}</dt><dd>{escape(str(v))}</dd>" for k, v in meta.items()
    )
    return (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{_CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        f'<dl class="meta">{meta_html}</dl>'
        f"{_legend()}"
        f"{render_svg(history, verdicts)}"
        f"{_table(build_rows(history, verdicts))}"
        f"<script>{_SCRIPT}</script>"
        "</body></html>\n"
    )
