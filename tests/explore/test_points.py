"""Injection points from a learn run, and their watches in another run."""

from __future__ import annotations

from mochaos.explore.points import Point, PointWatch, extract, recorded_roles
from mochaos.observe.history import History, State

from .histories import ROLES, migration_learn_run


def _by_label(points: list[Point]) -> dict[str, Point]:
    return {p.label: p for p in points}


def test_points_are_the_operators_transitions_by_role_in_the_order_first_seen():
    points = extract(migration_learn_run())
    assert [p.label for p in points] == [
        "target pod: claimed-by holder claim → migrating claim",
        "migrating claim: store source pod → target pod",
        "source pod: phase Bound → Draining",
        "source pod: claimed-by migrating claim → -",
        "source pod: phase Draining → Idle",
        "migrating claim: source source pod → -",
        "pool pod: created",
        "pool pod: gone",
    ]
    assert [p.id for p in points] == [f"p{i:02d}" for i in range(1, 9)]
    draining = _by_label(points)["source pod: phase Bound → Draining"]
    assert draining.first_seen == 3.0 and draining.named
    # The claims that named the pod then, and their sets: where its faults go.
    assert draining.related == {"CNClaim": ["migrating claim"], "CNClaimSet": ["migrating set"]}


def test_our_own_writes_the_set_up_and_the_epilogue_are_not_points():
    labels = set(_by_label(extract(migration_learn_run())))
    assert not any(label.startswith("migrating claim: pod ") for label in labels)  # the agent's
    assert "migrating claim: deleting no → yes" not in labels  # after settling
    assert not any("phase - → Bound" in label for label in labels)  # the set-up


def test_the_same_points_are_found_in_a_run_with_other_names():
    first = extract(migration_learn_run())
    other = extract(migration_learn_run(x="s1-abcde", z="s2-fghij", a="pool-1", b="pool-2"))
    assert [p.key for p in other] == [p.key for p in first]


def test_no_drive_marker_no_points():
    assert extract(History()) == []
    assert recorded_roles(migration_learn_run()) == ROLES


def _watch_over(history: History, point: Point) -> tuple[PointWatch, list[bool]]:
    """Feed a watch every state of ``history`` as a recorder listener would."""
    watch = PointWatch(point, recorded_roles(history))
    held = []
    for _entry, state in history.replay():
        watch.observe(state)
        held.append(watch(state))
    return watch, held


def test_a_watch_holds_from_the_transition_on_for_the_object_of_its_role():
    run = migration_learn_run(x="x2", z="z2", a="a2", b="b2")
    point = _by_label(extract(migration_learn_run()))["source pod: phase Bound → Draining"]
    watch, held = _watch_over(run, point)
    first = held.index(True)
    assert watch.matched == "a2"
    assert run[first - 1].t < 4 <= run[first].t  # the entry that made a2 Draining
    assert held[first + 1] is False  # the next entry: a2 Idle, the point is over


def test_a_watch_needs_the_before_value_seen_first():
    point = _by_label(extract(migration_learn_run()))["source pod: phase Bound → Draining"]
    watch = PointWatch(point, ROLES)
    draining = State()
    draining.objects["Pod"] = {
        "a": {"metadata": {"name": "a", "labels": {"pool.matrixorigin.io/phase": "Draining"}}}
    }
    watch.observe(draining)  # Draining from the start: never seen Bound
    assert not watch(draining)


def test_created_and_gone_watches_name_the_pool_pod():
    points = _by_label(extract(migration_learn_run()))
    watch, held = _watch_over(migration_learn_run(), points["pool pod: created"])
    assert any(held) and watch.matched == "pool-new"
    watch, held = _watch_over(migration_learn_run(), points["pool pod: gone"])
    assert held[-1] and watch.matched == "pool-new"
