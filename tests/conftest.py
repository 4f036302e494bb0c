"""The tests' tiers (unit, integration, e2e; registered in pyproject.toml): given to every collected
test from what it uses (tests/support/tiers.py says how; CONTRIBUTING.md when to run which)."""

from __future__ import annotations

import pytest

from support.tiers import TIERS_SEEN, tier_of, tiers_of


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Before -m deselects: every collected test gets its tier, and tests/test_tiers.py sees all.
    for item in items:
        if not tiers_of(item):
            item.add_marker(tier_of(item))
    config.stash[TIERS_SEEN] = {item.nodeid: tiers_of(item) for item in items}
