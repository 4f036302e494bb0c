"""Object facts, attribution and the replayed World the invariants share."""

from mochaos.invariants.facts import (
    World,
    claim_refs,
    claim_set,
    own_write_rvs,
    source_pod,
    spec_pod,
    store_pod,
)
from mochaos.types import CLAIMSET_LABEL

from .builders import HistoryBuilder, bind


def test_claim_fields_and_references():
    b = HistoryBuilder()
    migrating = b.claim("X", pod="B", source="A", store="A", phase="Bound").obj
    assert (spec_pod(migrating), source_pod(migrating), store_pod(migrating)) == ("B", "A", "A")
    assert claim_refs(migrating) == {"A", "B"}
    assert claim_refs({}) == frozenset()


def test_claim_set_from_label_or_controller_owner():
    owner = {"kind": "CNClaimSet", "name": "S2", "controller": True}
    assert claim_set({"metadata": {"labels": {CLAIMSET_LABEL: "S1"}}}) == "S1"
    assert claim_set({"metadata": {"ownerReferences": [owner]}}) == "S2"
    not_controller = {**owner, "controller": False}
    assert claim_set({"metadata": {"ownerReferences": [not_controller]}}) == ""


def test_own_writes_include_records_after_the_change():
    b = HistoryBuilder()
    ours = b.claim("X", pod="B", by="request_migration")
    operators = b.pod("B", phase="Bound", claimed_by="X")
    late = b.claim("X", phase="Bound")
    b.action("scale_claimset", kind="CNClaimSet", name="S1", write_rv=late.rv)
    b.action("delete_pod", kind="Pod", name="A", write_rv=None)
    rvs = own_write_rvs(b.build())
    assert ours.rv in rvs and late.rv in rvs
    assert operators.rv not in rvs


def test_world_indexes_follow_relabels_and_deletions():
    b = HistoryBuilder()
    bind(b, "X", "A")
    bind(b, "Z", "B")
    b.claim("X", pod="B", source="A")
    b.pod("B", claimed_by="X")
    b.claim("Z", deleting=True)
    world = World()
    for change in b.build().changes():
        world.apply(change)
    assert world.pods_labelled("X") == ["A", "B"]
    assert world.pods_labelled("Z") == []
    assert world.claims_naming("B") == ["X", "Z"]
    assert world.holders("B", besides="W") == ["X"]
    assert world.live_claim("Z") is None

    b.delete("Pod", "A")
    b.delete("CNClaim", "X")
    world = World()
    for change in b.build().changes():
        world.apply(change)
    assert world.pods_labelled("X") == ["B"]
    assert world.claims_naming("B") == ["Z"]
    assert world.holders("B", besides="W") == []
