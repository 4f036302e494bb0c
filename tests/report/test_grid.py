"""grid.html: builds as columns, scenarios as rows, cells coloured and linked; seen in Chromium."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mochaos.report.grid import STATUS_COLOURS, write_grid

from .browser import chromium, needs_chromium
from .history_builder import Night, record_nights

PLAN = [
    Night("v1", {"steady": ["passed"], "regress": ["passed"], "flaky": ["passed"],
                 "fixed": ["failed"], "noverdict": ["passed"]}),
    Night("v2", {"steady": ["passed"], "regress": ["passed"],
                 "flaky": ["passed", "failed", "passed"], "fixed": ["failed"],
                 "noverdict": ["error"], "late": ["passed"]}),
    Night("v3", {"steady": ["passed"], "regress": ["failed"], "flaky": ["passed"],
                 "fixed": ["passed"], "noverdict": ["passed"], "late": ["passed"]}),
]  # fmt: skip
EXPECTED = {
    "fixed": ["fail", "fail", "pass"],
    "flaky": ["pass", "flaky", "pass"],
    "late": ["not run", "pass", "pass"],
    "noverdict": ["pass", "no verdict", "pass"],
    "regress": ["pass", "pass", "fail"],
    "steady": ["pass", "pass", "pass"],
}
FLAGGED = {"fixed", "regress", "flaky", "noverdict"}
"""Rows whose newest build changed their signature."""


@pytest.fixture
def grid(tmp_path: Path) -> Path:
    store = tmp_path / "history"
    record_nights(tmp_path, store, PLAN)
    return write_grid(store)


class _Cells(HTMLParser):
    """Rows of the grid: scenario name → [(status, classes, href)], and the flagged rows."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[tuple[str, str, str | None]]] = {}
        self.flagged: set[str] = set()
        self.builds: list[str] = []
        self._row: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "th" and "build" in (a.get("class") or ""):
            self.builds.append(str(a["data-build"]))
        if tag == "tr" and a.get("data-scenario"):
            self._row = str(a["data-scenario"]).split("::")[-1]
            self.rows[self._row] = []
            if "flagged" in (a.get("class") or ""):
                self.flagged.add(self._row)
        if tag == "td" and self._row is not None:
            self.rows[self._row].append((str(a["data-status"]), str(a.get("class")), None))
        if tag == "a" and self._row is not None:
            status, classes, _ = self.rows[self._row][-1]
            self.rows[self._row][-1] = (status, classes, a.get("href"))


def parse(page: Path) -> _Cells:
    cells = _Cells()
    cells.feed(page.read_text())
    return cells


def test_builds_are_columns_and_scenarios_rows(grid: Path):
    cells = parse(grid)
    assert cells.builds == ["v1", "v2", "v3"]
    assert {name: [c[0] for c in row] for name, row in cells.rows.items()} == EXPECTED
    assert cells.flagged == FLAGGED
    changed = {name: [i for i, c in enumerate(row) if "changed" in c[1]]
               for name, row in cells.rows.items()}  # fmt: skip
    assert changed == {"fixed": [2], "flaky": [1, 2], "late": [], "noverdict": [1, 2],
                       "regress": [2], "steady": []}  # fmt: skip


def test_every_cell_that_ran_links_to_its_timeline(grid: Path):
    for name, row in parse(grid).rows.items():
        for build, (status, _, href) in zip(("v1", "v2", "v3"), row, strict=True):
            if status == "not run":
                assert href is None
                continue
            assert href is not None, (name, build)
            text = (grid.parent / href).read_text()
            assert text.startswith(f"<html>{name} run ")
    flaky_v2 = parse(grid).rows["flaky"][1][2]
    assert (grid.parent / str(flaky_v2)).read_text() == "<html>flaky run 2 failed</html>"


def test_the_summary_names_regressed_fixed_and_flaky_with_wilson(grid: Path):
    page = grid.read_text()
    assert re.search(r'<ul class="regressed"><li>test_t.py::regress</li></ul>', page)
    assert re.search(r'<ul class="fixed"><li>test_t.py::fixed</li></ul>', page)
    assert re.search(r'<ul class="changed"><li>test_t.py::flaky</li><li>test_t.py::noverdict</li>'
                     r"</ul>", page)  # fmt: skip
    assert "test_t.py::flaky on v2: failed 1 of 3 runs (33%; 95 % Wilson interval 6%–79%)" in page
    for external in ("http:", "https:", "src=", "<link", "@import", "url("):
        assert external not in page


PROBE = """<script>
const cells = [...document.querySelectorAll('td.cell')].map(td => {
  const r = td.getBoundingClientRect(); const a = td.querySelector('a');
  return {row: td.parentElement.dataset.scenario.split('::').pop(), status: td.dataset.status,
          colour: getComputedStyle(td).backgroundColor, href: a ? a.href : null,
          x: r.left, y: r.top, w: r.width, h: r.height};
});
const out = document.createElement('pre'); out.id = 'probe';
out.textContent = JSON.stringify({
  columns: [...document.querySelectorAll('th.build')].map(th => th.dataset.build),
  rows: [...document.querySelectorAll('tr.row')].map(tr => tr.dataset.scenario.split('::').pop()),
  flagged: [...document.querySelectorAll('tr.flagged')]
    .map(tr => tr.dataset.scenario.split('::').pop()),
  cells});
document.body.appendChild(out);
</script>"""
WINDOW = ("--window-size=1400,1000", "--force-device-scale-factor=1", "--hide-scrollbars")


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


@needs_chromium
def test_the_grid_as_chromium_draws_it(tmp_path: Path, grid: Path):
    """Chromium lays the page out (a probe in a copy reads the layout back from the DOM) and
    screenshots the page itself; every cell's pixels have its outcome's colour."""
    from PIL import Image

    probed = grid.with_name("probed.html")
    probed.write_text(grid.read_text().replace("</body>", PROBE + "</body>"))
    dumped = chromium(probed, tmp_path, "--dump-dom", *WINDOW)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    match = re.search(r'<pre id="probe">(.*?)</pre>', dumped.stdout, re.S)
    assert match, "the probe did not run"
    probe = json.loads(match.group(1).replace("&amp;", "&").replace("&lt;", "<")
                       .replace("&gt;", ">").replace("&quot;", '"'))  # fmt: skip
    assert probe["columns"] == ["v1", "v2", "v3"]
    assert probe["rows"] == sorted(EXPECTED)
    assert set(probe["flagged"]) == FLAGGED
    shot = tmp_path / "grid.png"
    taken = chromium(grid, tmp_path, f"--screenshot={shot}", *WINDOW)
    assert taken.returncode == 0, taken.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    seen = {}
    for cell in probe["cells"]:
        assert cell["w"] > 20 and cell["h"] > 15, cell  # laid out, not collapsed
        expected = _rgb(STATUS_COLOURS[cell["status"]])
        assert cell["colour"] == "rgb({}, {}, {})".format(*expected)
        # A point right of the glyph and clear of the changed-marker on the left edge.
        pixel = image.getpixel((int(cell["x"] + cell["w"] * 0.85), int(cell["y"] + 4)))
        assert all(abs(p - e) <= 6 for p, e in zip(pixel, expected, strict=True)), (cell, pixel)
        seen.setdefault(cell["row"], []).append(cell["status"])
        if cell["status"] != "not run":
            assert cell["href"] and Path(cell["href"].removeprefix("file://")).is_file(), cell
    assert seen == EXPECTED
    (tmp_path / "kept").mkdir()
    image.save(tmp_path / "kept" / "grid.png")
