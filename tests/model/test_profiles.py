"""Each profile is exactly its set of switches; names and aliases resolve; others are refused."""

from __future__ import annotations

import itertools

import pytest

from mochaos.model.profiles import PROFILES, get_profile

SWITCHES = (
    "claim_index",
    "finalize_releases_label",
    "relabel_for_holder",
    "finalize_own_spec_pod",
    "scalein_skips_migrating",
    "lost_clears_podname",
    "lost_ends_migration",
    "pod_map_by_podname",
)

EXPECTED = {
    "pre-587": (False, False, False, False, False, False, False, False),
    "upstream": (True, False, False, False, False, False, False, False),
    "pr592": (True, True, False, False, True, True, False, True),
    "fixed": (True, True, True, True, True, True, True, True),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_profile_switches(name: str) -> None:
    profile = get_profile(name)
    assert tuple(getattr(profile, s) for s in SWITCHES) == EXPECTED[name]


def test_profiles_differ_by_one_switch_in_order() -> None:
    order = ["pre-587", "upstream", "pr592", "fixed"]
    assert list(PROFILES) == order
    flips = [
        sum(a != b for a, b in zip(EXPECTED[x], EXPECTED[y], strict=True))
        for x, y in itertools.pairwise(order)
    ]
    # #587 adds the index; PR #592 is four fixes at once; fixed adds the hand-over and
    # reclaims its own pod when a stale cache still shows the previous holder's label, and
    # ends a migration whose target pod is gone.
    assert flips == [1, 4, 3]


def test_alias_of_upstream() -> None:
    assert get_profile("eb9b356") is get_profile("upstream")


def test_unknown_profile_names_the_valid_ones() -> None:
    with pytest.raises(KeyError) as err:
        get_profile("main")
    message = err.value.args[0]
    for name in ("pre-587", "upstream", "eb9b356", "pr592", "fixed"):
        assert name in message
