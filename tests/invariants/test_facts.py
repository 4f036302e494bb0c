"""Object facts, attribution and the replayed World the invariants share."""

from mochaos.ctrl.objects import CLAIMSET_LABEL, claim_phase
from mochaos.invariants.facts import (
    Facts,
    World,
    binding,
    claim_refs,
    claim_set,
    claimed_by,
    finalizers,
    pod_phase,
    source_pod,
    spec_pod,
    store_pod,
)

from support.builders import HistoryBuilder, bind


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


def test_facts_learn_our_write_versions_and_follow_the_end():
    b = HistoryBuilder()
    ours = b.claim("X", pod="B", by="request_migration")
    failed = b.at(3).action("delete_pod", kind="Pod", name="A", write_rv=None)
    facts = Facts()
    assert (facts.end, facts.last_seq, facts.own_rvs) == (0.0, -1, set())
    for entry in b.entries:
        if isinstance(entry, type(failed)):
            facts.learn(entry)
        facts.advance(entry)
    assert facts.own_rvs == {ours.rv}
    assert (facts.end, facts.last_seq) == (3, failed.seq)


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


def test_world_indexes_claims_by_claim_set():
    b = HistoryBuilder()
    bind(b, "X", "A", claimset="S1")
    bind(b, "Y", "C", claimset="S1")
    bind(b, "Z", "B", claimset="S2")
    b.claim("Y", claimset="S2")
    b.delete("CNClaim", "X")
    world = World()
    for change in b.build().changes():
        world.apply(change)
    assert world.claims_in_set("S1") == set()
    assert world.claims_in_set("S2") == {"Y", "Z"}
    assert world.claims_in_set("S3") == set()


def test_absent_fields_read_as_empty():
    for read in (spec_pod, source_pod, store_pod, claim_phase, claimed_by, pod_phase, claim_set):
        assert read({}) == ""
        assert read({"spec": None, "status": None, "metadata": None}) == ""
    owner = {"kind": "CNClaimSet", "controller": True}
    assert claim_set({"metadata": {"ownerReferences": [owner]}}) == ""
    assert finalizers({}) == []


def test_holders_by_label_only_and_by_spec_only():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.pod("A", claimed_by="W")  # W holds A by label alone
    b.claim("W", pod="Q", phase="Bound")
    b.claim("V", pod="A")  # V holds A by spec alone
    b.pod("Q", phase="Idle")
    world = World()
    for change in b.build().changes():
        world.apply(change)
    assert world.holders("A", besides="X") == ["V", "W"]
    assert world.holders("A", besides="W") == ["V", "X"]
    assert world.holders("Q", besides="X") == ["W"]
    assert world.holders("Z", besides="X") == []
    assert world.live_claim("") is None


def test_a_claim_is_binding_while_pending_and_naming_no_pod():
    def claim(pod: str | None = None, phase: str | None = None) -> dict:
        obj: dict = {"metadata": {"name": "X"}, "spec": {}, "status": {}}
        if pod is not None:
            obj["spec"]["podName"] = pod
        if phase is not None:
            obj["status"]["phase"] = phase
        return obj

    assert binding(claim()) and binding(claim(phase="Pending")) and binding(claim(phase=""))
    assert binding({"metadata": {"name": "X"}})  # nothing written yet
    assert not binding(claim(pod="A", phase="Pending"))  # it named its pod: bound
    assert not binding(claim(pod="A"))
    for phase in ("Bound", "Lost", "Outdated"):
        assert not binding(claim(phase=phase)), phase
