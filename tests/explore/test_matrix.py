"""Which faults apply to a point, and how --faults is read."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mochaos.config import CheckOptions
from mochaos.errors import UsageError
from mochaos.explore.matrix import EXPLORED, RoleFault, applicable, inject, parse_fault_kinds
from mochaos.explore.points import extract

from .histories import migration_learn_run

ALL = tuple(EXPLORED)


def _point(label: str):
    (point,) = (p for p in extract(migration_learn_run()) if p.label == label)
    return point


def test_a_pod_point_gets_its_own_faults_those_of_the_claims_naming_it_and_the_operators():
    faults = applicable(_point("source pod: phase Bound → Draining"), ALL)
    assert [f.label for f in faults] == [
        "delete-pod source pod",  # its label went in the same write: none to remove
        "scale-in migrating set", "scale-out migrating set", "delete-claim migrating claim",
        "restart", "kill", "pause",
        # the interposer's, on the object the operator read
        "hold-write source pod", "fail-write source pod", "stale-view source pod",
        "unobserved source pod",
    ]  # fmt: skip


def test_the_seed_race_is_a_cell_of_the_default_matrix():
    assert RoleFault("scale-in", "migrating set") in applicable(
        _point("source pod: phase Bound → Draining"), ALL
    )


def test_a_pool_pod_is_targeted_as_the_point_and_a_gone_object_gets_no_fault_of_its_own():
    created = [f.label for f in applicable(_point("pool pod: created"), ALL)]
    assert created == [
        "delete-pod point", "restart", "kill", "pause",  # Idle: no label
        "hold-write point", "fail-write point", "stale-view point", "unobserved point",
    ]  # fmt: skip
    gone = [f.label for f in applicable(_point("pool pod: gone"), ALL)]
    assert gone == ["restart", "kill", "pause"]


def test_a_labelled_pod_gets_its_label_removed_and_both_claims_naming_it_their_faults():
    faults = [
        f.label
        for f in applicable(_point("target pod: claimed-by holder claim → migrating claim"), ALL)
    ]
    assert faults[:2] == ["delete-pod target pod", "remove-label target pod"]
    assert {"scale-in holder set", "scale-in migrating set", "delete-claim holder claim"} <= set(
        faults
    )


def test_a_pod_that_just_lost_its_label_gets_no_label_removal():
    labels = [f.kind for f in applicable(_point("source pod: claimed-by migrating claim → -"), ALL)]
    assert "remove-label" not in labels and "delete-pod" in labels


def test_faults_picks_kinds_and_refuses_unknown_ones():
    assert parse_fault_kinds("") == ALL
    assert parse_fault_kinds("scale-in, restart") == ("scale-in", "restart")
    faults = applicable(_point("source pod: phase Bound → Draining"), ("scale-in",))
    assert faults == [RoleFault("scale-in", "migrating set")]
    with pytest.raises(UsageError, match="unknown fault nap"):
        parse_fault_kinds("scale-in,nap")


def test_slugs_are_test_ids():
    assert RoleFault("scale-in", "migrating set").slug == "scale-in.migrating-set"
    assert RoleFault("restart").slug == "restart"


def test_matrixone_faults_join_the_matrix_on_the_components_the_target_takes_down():
    point = _point("source pod: phase Bound → Draining")
    assert not {"hakeeper-down", "lockservice-down", "query-down"} & {
        f.kind for f in applicable(point, ALL)
    }  # a target that can take nothing down (kind's real MatrixOne)
    model = [f.label for f in applicable(point, ALL, matrixone=("hakeeper",))]
    assert "hakeeper-down" in model and "lockservice-down" not in model
    assert not any(label.startswith("query-down") for label in model)
    real = applicable(point, ALL, matrixone=("hakeeper", "lockservice", "query"))
    assert {RoleFault("hakeeper-down"), RoleFault("lockservice-down"),
            RoleFault("query-down", "source pod")} <= set(real)  # fmt: skip


def test_a_matrixone_fault_is_injected_for_a_while_on_its_component():
    injected = []

    def record(fault, trigger):
        injected.append((fault, trigger))

    sc = SimpleNamespace(options=CheckOptions(time_scale=0.5), inject=record)
    watch = SimpleNamespace(matched="pool-x", point=None, name="p01")
    inject(sc, RoleFault("hakeeper-down"), "fired", watch, {})
    inject(sc, RoleFault("query-down", "point"), "fired", watch, {})
    (down, trigger), (query, _) = injected
    assert (down.kind.name, down.target, dict(down.params), trigger) == (
        "hakeeper-down", "", {"seconds": 5.0, "how": "refuse"}, "fired",
    )  # fmt: skip
    assert (query.kind.name, query.target, query.params["seconds"]) == ("query-down", "pool-x", 5.0)
