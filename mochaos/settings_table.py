"""The settings table of docs/settings.md, written from ``config.SETTINGS`` (one row each).

``python -m mochaos.settings_table [page]`` rewrites the table between its markers;
tests/test_settings_table.py fails when the page and the settings differ.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mochaos.config import SETTINGS, Setting

BEGIN = "<!-- settings table: written by python -m mochaos.settings_table; do not edit -->"
END = "<!-- end of settings table -->"
PAGE = Path(__file__).resolve().parents[1] / "docs" / "settings.md"


def _default(s: Setting) -> str:
    if s.shown:
        return s.shown
    value: Any = s.default
    if s.switch:
        return "off"
    if value is None or value == ():
        return "–"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def markdown() -> str:
    """The table: option, ini key, environment variable, default, meaning."""
    rows = [
        "| option | ini key | environment | default | meaning |",
        "|---|---|---|---|---|",
    ]
    for s in SETTINGS:
        meaning = f"{s.help} {s.doc}".strip().replace("|", "\\|").replace("<", "\\<")
        rows.append(f"| `{s.flag}` | `{s.ini}` | `{s.env}` | {_default(s)} | {meaning} |")
    return "\n".join(rows)


def rewrite(text: str) -> str:
    """``text`` with the table between the markers replaced; ValueError without them."""
    head, begin, rest = text.partition(BEGIN + "\n")
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"the page has no {BEGIN!r} … {END!r} markers")
    return f"{head}{BEGIN}\n{markdown()}\n{END}{tail}"


if __name__ == "__main__":
    page = Path(sys.argv[1]) if len(sys.argv) > 1 else PAGE
    page.write_text(rewrite(page.read_text()))
