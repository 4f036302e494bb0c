"""The migration-phase predicates, on hand-built states (red and green for each)."""

from __future__ import annotations

import pytest

from mochaos.observe.history import Change, State
from mochaos.scenario import MIGRATION_PHASES, name_of

PHASE = "pool.matrixorigin.io/phase"
HOLDER = "pool.matrixorigin.io/claimed-by"


def _state(*, source_phase: str, target_holder: str, source_set: bool, store: str) -> State:
    s = State()
    spec = {"podName": "b", **({"sourcePod": {"podName": "a"}} if source_set else {})}
    claim = {"metadata": {"name": "x"}, "spec": spec, "status": {"store": {"string": store}}}
    s.apply(Change(1, 0, "CNClaim", "ADDED", "ns", "x", 1, claim))
    pods = {"a": {PHASE: source_phase}, "b": {PHASE: "Bound", HOLDER: target_holder}}
    for i, (name, labels) in enumerate(pods.items(), 2):
        s.apply(
            Change(
                i, 0, "Pod", "ADDED", "ns", name, i, {"metadata": {"name": name, "labels": labels}}
            )
        )
    return s


STATES = {
    "target-bound": _state(source_phase="Bound", target_holder="x", source_set=True, store="b"),
    "source-draining": _state(
        source_phase="Draining", target_holder="x", source_set=True, store="b"
    ),
    "source-reclaimed": _state(source_phase="Idle", target_holder="x", source_set=True, store="b"),
    "completed": _state(source_phase="Idle", target_holder="x", source_set=False, store="b"),
}


@pytest.mark.parametrize("phase", list(MIGRATION_PHASES))
def test_each_phase_holds_in_its_own_state(phase):
    predicate = MIGRATION_PHASES[phase]("x", "a", "b")
    assert name_of(predicate) == ("migration-complete" if phase == "completed" else phase)
    assert predicate(STATES[phase])


@pytest.mark.parametrize("phase", ["source-draining", "source-reclaimed", "completed"])
def test_later_phases_do_not_hold_before_they_happen(phase):
    assert not MIGRATION_PHASES[phase]("x", "a", "b")(STATES["target-bound"])


def test_target_bound_needs_the_label_of_the_migrating_claim():
    held_by_other = _state(source_phase="Bound", target_holder="z", source_set=True, store="b")
    assert not MIGRATION_PHASES["target-bound"]("x", "a", "b")(held_by_other)
