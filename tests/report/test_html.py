"""The HTML timeline: lanes and segments, self-containment, and a real headless render."""

import re

from mochaos.ctrl.objects import PHASE_LABEL
from mochaos.report.html import build_lanes, render_html

from .browser import chromium, needs_chromium
from support.builders import HistoryBuilder


def test_lanes_follow_claim_state_and_pod_phase_label():
    b = HistoryBuilder.recorded()
    b.running_pod("A", node="n1")
    b.created_claim("X", claimset="S1")
    b.at(1).edit(
        "CNClaim", "X", lambda o: o.update(status={"phase": "Bound"}, spec={"podName": "A"})
    )
    b.at(1.5).edit("CNClaim", "X", lambda o: o["metadata"].update(finalizers=["f"]))  # same segment
    b.at(2).edit("Pod", "A", lambda o: o["metadata"]["labels"].update({PHASE_LABEL: "Draining"}))
    b.at(3).edit(
        "CNClaim", "X", lambda o: o["spec"].update(sourcePod={"podName": "A"}, podName="B")
    )
    b.at(4).edit("CNClaim", "X", lambda o: o["metadata"].update(deletionTimestamp="t"))
    b.at(5).delete("Pod", "A")
    b.at(6).marker("settled")
    lanes = {lane.ref: lane for lane in build_lanes(b.history())}
    assert list(lanes) == ["claim/X", "pod/A"]
    claim = [
        (s.start - b.start, s.end - b.start, s.state, s.label) for s in lanes["claim/X"].segments
    ]
    assert claim == [
        (0, 1, "New", ""),
        (1, 3, "Bound", "A"),
        (3, 4, "Migrating", "A→B"),
        (4, 6, "Deleting", "B"),
    ]
    pod = [(s.start - b.start, s.end - b.start, s.state) for s in lanes["pod/A"].segments]
    assert pod == [(0, 2, "Idle"), (2, 5, "Draining")]


def test_page_is_self_contained_and_has_one_lane_per_claim_and_pod(seed_history, seed_result):
    page = render_html(seed_history, seed_result.verdicts, title="T <x>", meta={"op": "a&b"})
    assert "<title>T &lt;x&gt;</title>" in page and "a&amp;b" in page
    assert re.findall(r'data-lane="([^"]+)"', page) == [
        "claim/X",
        "claim/Y",
        "claim/Z",
        "pod/A",
        "pod/B",
        "pod/C",
    ]
    assert 'data-lanes="6"' in page
    for external in ("http:", "https:", "src=", "<link", "@import", "url("):
        assert external not in page
    assert page.count('class="violated"') == 3  # claims X, Z and pod B
    assert "⚡ scale replicas 1 claimset/S1" in page  # in the fault table's words
    assert "✗ finalizer-completes" in page


def _rendered(dom: str) -> tuple[int, int]:
    lanes = re.search(r'data-lanes-rendered="(\d+)"', dom)
    segments = re.search(r'data-segments-rendered="(\d+)"', dom)
    assert lanes and segments, "the page's layout script did not run"
    return int(lanes.group(1)), int(segments.group(1))


@needs_chromium
def test_lanes_render_in_headlesschromium(tmp_path, seed_history, seed_result):
    page = tmp_path / "timeline.html"
    page.write_text(render_html(seed_history, seed_result.verdicts, title="seed", meta={}))
    dumped = chromium(page, tmp_path, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    lanes, segments = _rendered(dumped.stdout)
    assert lanes == 6
    assert segments == page.read_text().count('class="seg"')
    shot = tmp_path / "timeline.png"
    taken = chromium(page, tmp_path, f"--screenshot={shot}", "--window-size=1400,1000")
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@needs_chromium
def test_layout_check_sees_lanes_that_did_not_render(tmp_path, seed_history, seed_result):
    """The stamp measures layout: hidden lanes count as not rendered."""
    html = render_html(seed_history, seed_result.verdicts, title="seed", meta={})
    page = tmp_path / "hidden.html"
    page.write_text(html.replace("</style>", "svg.swimlanes { display: none; }</style>", 1))
    dumped = chromium(page, tmp_path, "--dump-dom")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    assert _rendered(dumped.stdout) == (0, 0)
