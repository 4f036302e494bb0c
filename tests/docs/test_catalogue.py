"""docs/invariants.md has an entry for every registered invariant: a table row whose bugs
and "judged" columns are the invariant's own, and a section of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos.invariants import ALL

CATALOGUE = (Path(__file__).resolve().parents[2] / "docs" / "invariants.md").read_text()


@pytest.mark.parametrize("invariant", ALL, ids=[inv.id for inv in ALL])
def test_each_invariant_has_its_row_and_section(invariant):
    assert f"\n## {invariant.id}\n" in CATALOGUE, f"no section for {invariant.id}"
    row = next(
        (line for line in CATALOGUE.splitlines() if line.startswith(f"| [{invariant.id}](")),
        None,
    )
    assert row is not None, f"no table row for {invariant.id}"
    cells = row.strip("|").split("|")
    assert cells[-1].strip() == (", ".join(invariant.bugs) or "–"), row
    assert ("at settle" in cells[2]) == invariant.at_settle_only, row
