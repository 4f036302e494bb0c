"""Every collected test is in exactly one tier (tests/support/tiers.py): ``-m unit`` runs it
or not, never both ways, and no test falls between the tiers."""

from __future__ import annotations

import pytest

from support.tiers import TIERS, TIERS_SEEN


def test_every_collected_test_has_exactly_one_tier(request: pytest.FixtureRequest):
    seen = request.config.stash[TIERS_SEEN]
    assert request.node.nodeid in seen
    wrong = {nodeid: tiers for nodeid, tiers in seen.items() if len(tiers) != 1}
    assert wrong == {}, "give each a single pytestmark = pytest.mark.<tier> (one of " + (
        ", ".join(TIERS) + ")"
    )
