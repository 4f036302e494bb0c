"""Run by tests/interpose/test_interposer_faults.py as a child pytest on ``model:fixed``: the
interposer's faults on a correct operator. Not collected by ``pytest tests/``."""

from __future__ import annotations

import pytest

from mochaos.scenario import (
    Scenario,
    claim_bound,
    crash_after_write,
    fail_write,
    hold_write,
)

pytestmark = pytest.mark.scenario


def test_crash_right_after_the_bind(scenario: Scenario) -> None:
    """The operator dies the moment its status write binding X lands, and starts again."""
    sc = scenario
    sc.topology.pool("pool", max_idle=1)
    sc.inject(crash_after_write("x", kind="CNClaim", verbs=("update",), subresource="status"))
    sc.topology.claim("x")
    sc.when(claim_bound("x"), timeout=sc.waits.bind)


def test_two_conflicts_then_the_write_lands(scenario: Scenario) -> None:
    sc = scenario
    sc.topology.pool("pool", max_idle=1)
    sc.inject(fail_write("x", kind="CNClaim", subresource="status", status=409, times=2))
    sc.topology.claim("x")


def test_a_hold_the_test_never_releases_is_let_go_at_its_end(scenario: Scenario) -> None:
    sc = scenario
    sc.topology.pool("pool", max_idle=1)
    held = sc.inject(hold_write("x", kind="CNClaim", subresource="status"))
    sc.topology.claim("x", wait_bound=False)
    sc.when_taken(held, timeout=sc.waits.bind)


def test_a_rule_nothing_matches_did_not_happen(scenario: Scenario) -> None:
    sc = scenario
    sc.topology.pool("pool", max_idle=1)
    sc.inject(hold_write("nobody", kind="Pod"))
    sc.topology.claim("x")
