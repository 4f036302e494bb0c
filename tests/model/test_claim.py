"""CNClaim controller: the pure steps (priority, index, pod mapping), each profile switch on
one actor step, and the bugs B1/B5, B3, B4, #581 and the migration path on a real cluster.
"""

from __future__ import annotations

import threading

import pytest

from mochaos.ctrl.rest import CLAIMS, PODS
from mochaos.model.claim import ClaimActor, claims_for_pod, pod_claim_index, priority_order
from mochaos.model.hakeeper import HAKeeper, StoreCache
from mochaos.model.profiles import get_profile
from mochaos.model.runtime.context import ReSync
from mochaos.model.timing import Timing

from .fakes import FakeClient, ListSink, claim, context, pod
from .scene import ModelProcess, Scene, labels

CLAIMED_BY = "pool.matrixorigin.io/claimed-by"
PHASE = "pool.matrixorigin.io/phase"


def actor(profile: str) -> ClaimActor:
    cache = StoreCache(stores=list, refresh=15, stop=threading.Event())
    return ClaimActor(profile=get_profile(profile), timing=Timing(), hakeeper=HAKeeper(cache))


def created(name: str, ts: str, **labels: str) -> dict:
    p = pod(name, **labels)
    p["metadata"]["creationTimestamp"] = ts
    return p


# ---------------------------------------------------------------- selectCN priority (§4.2)


def test_priority_prefers_pods_last_owned_by_the_owner() -> None:
    c = claim("x", ownerName="cs")
    pods = [
        created("a", "2026-01-01T10:00:01Z"),
        created("b", "2026-01-01T10:00:30Z", **{"matrixorigin.io/last-owner": "cs"}),
    ]
    assert [p["metadata"]["name"] for p in priority_order(c, pods)] == ["b", "a"]


def test_priority_without_owner_ignores_last_owner() -> None:
    pods = [
        created("b", "2026-01-01T10:00:30Z", **{"matrixorigin.io/last-owner": "cs"}),
        created("a", "2026-01-01T10:00:01Z"),
    ]
    assert [p["metadata"]["name"] for p in priority_order(claim("x"), pods)] == ["a", "b"]


def test_priority_uses_seconds_of_the_minute_not_age() -> None:
    # Quirk Q3: 10:05:03 sorts before 10:00:59 although it is newer.
    pods = [created("old", "2026-01-01T10:00:59Z"), created("new", "2026-01-01T10:05:03Z")]
    assert [p["metadata"]["name"] for p in priority_order(claim("x"), pods)] == ["new", "old"]


def test_priority_ties_keep_list_order() -> None:
    pods = [created("b", "2026-01-01T10:00:07Z"), created("a", "2026-01-01T11:30:07Z")]
    assert [p["metadata"]["name"] for p in priority_order(claim("x"), pods)] == ["b", "a"]


# ---------------------------------------------------------------- the #587 index


def test_index_skips_self_deleting_and_unbound_but_keeps_lost() -> None:
    deleting = claim("d", "p4")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    claims = [claim("me", "p1"), claim("lost", "p2", "Lost"), claim("pending"), deleting]
    assert pod_claim_index(claims, exclude="me") == {"p2": "lost"}


def test_index_last_claim_wins_a_shared_pod() -> None:
    assert pod_claim_index([claim("a", "p"), claim("b", "p")], exclude="x") == {"p": "b"}


# ---------------------------------------------------------------- pod -> claim mapping (§4.8)


def test_mapping_follows_status_changes_only() -> None:
    old = pod("p", **{CLAIMED_BY: "x"})
    relabelled = pod("p", **{CLAIMED_BY: "y"})
    assert claims_for_pod("MODIFIED", old, relabelled, claims=None) == []
    restarted = pod("p", **{CLAIMED_BY: "x"})
    restarted["status"]["phase"] = "Failed"
    assert claims_for_pod("MODIFIED", old, restarted, claims=None) == ["x"]


def test_mapping_of_a_delete_uses_the_last_label() -> None:
    assert claims_for_pod("DELETED", pod("p", **{CLAIMED_BY: "x"}), None, claims=None) == ["x"]
    assert claims_for_pod("DELETED", pod("p"), None, claims=None) == []


def test_mapping_by_pod_name_finds_claims_without_the_label() -> None:
    claims = [claim("z", "p"), claim("x", "p"), claim("other", "q")]
    assert claims_for_pod("DELETED", pod("p"), None, claims=lambda: claims) == ["z", "x"]
    labelled = pod("p", **{CLAIMED_BY: "x"})
    assert claims_for_pod("ADDED", None, labelled, claims=lambda: claims) == ["x", "z"]


# ---------------------------------------------------------------- Finalize per profile (B1/B5)


def finalize_scene(profile: str) -> tuple[FakeClient, ListSink, bool]:
    client = FakeClient()
    client.add(PODS, pod("p", **{PHASE: "Bound", CLAIMED_BY: "x"}))
    client.add(CLAIMS, claim("x", "p", "Bound"))
    client.add(CLAIMS, claim("z", "p", "Bound"))
    sink = ListSink()
    done = actor(profile).finalize(context(client, CLAIMS, "x", sink))
    return client, sink, done


def test_finalize_before_587_reclaims_a_pod_another_claim_uses() -> None:
    client, sink, done = finalize_scene("pre-587")
    labels = client.get(PODS, "p")["metadata"]["labels"]
    assert labels[PHASE] == "Draining" and CLAIMED_BY not in labels
    assert not done
    assert "finalize CNClaim, reclaim bound CN" in sink.msgs()


def test_finalize_upstream_skips_the_pod_and_never_completes() -> None:
    client, sink, done = finalize_scene("upstream")
    labels = client.get(PODS, "p")["metadata"]["labels"]
    assert labels == {PHASE: "Bound", CLAIMED_BY: "x"}
    assert not done
    assert sink.msgs() == ["finalize CNClaim", "skip reclaim, pod still claimed by other CNClaim"]


def test_finalize_pr592_releases_the_label_and_completes() -> None:
    client, sink, done = finalize_scene("pr592")
    assert client.get(PODS, "p")["metadata"]["labels"] == {PHASE: "Bound"}
    assert done
    assert "release pod label, pod claimed by other CNClaim" in sink.msgs()


def test_finalize_fixed_hands_the_pod_to_its_holder() -> None:
    client, _, done = finalize_scene("fixed")
    assert client.get(PODS, "p")["metadata"]["labels"] == {PHASE: "Bound", CLAIMED_BY: "z"}
    assert done


@pytest.mark.parametrize(("profile", "reclaimed"), [("pr592", False), ("fixed", True)])
def test_finalize_reclaims_its_own_pod_still_labelled_for_a_finished_claim(
    profile: str, reclaimed: bool
) -> None:
    """The holder is finalized before its cache shows the handed-over label: the pod still
    says claimed-by=x (x deleting); only ``fixed`` reclaims it instead of leaking it."""
    client = FakeClient()
    client.add(PODS, pod("p", **{PHASE: "Bound", CLAIMED_BY: "x"}))
    gone = claim("x", "p", "Bound")
    gone["metadata"]["deletionTimestamp"] = "2026-01-01T10:00:00Z"
    client.add(CLAIMS, gone)
    client.add(CLAIMS, claim("z", "p", "Bound"))
    done = actor(profile).finalize(context(client, CLAIMS, "z", ListSink()))
    labels = client.get(PODS, "p")["metadata"]["labels"]
    assert (labels[PHASE] == "Draining") is reclaimed
    assert done  # PR #592's Finalize reports done after its loop either way


def test_finalize_without_owned_pods_is_done() -> None:
    client = FakeClient()
    client.add(CLAIMS, claim("x", "p", "Bound"))
    assert actor("upstream").finalize(context(client, CLAIMS, "x", ListSink()))


# ---------------------------------------------------------------- Sync on a missing pod (B3)


@pytest.mark.parametrize(("profile", "kept"), [("upstream", "gone"), ("pr592", None)])
def test_sync_of_a_claim_whose_pod_is_gone(profile: str, kept: str | None) -> None:
    client = FakeClient()
    c = claim("x", "gone", "Bound")
    c["status"]["boundTime"] = "2026-01-01T00:00:00Z"
    client.add(CLAIMS, c)
    ctx = context(client, CLAIMS, "x", ListSink())
    actor(profile).sync(ctx)
    assert client.get(CLAIMS, "x")["spec"].get("podName") == kept
    if profile == "upstream":
        assert ctx.obj["status"]["phase"] == "Lost"


# ---------------------------------------------------------------- selectCN with/without index


@pytest.mark.parametrize(("profile", "bound_to"), [("pre-587", "b"), ("upstream", None)])
def test_bind_takes_an_idle_pod_another_claim_names_only_before_587(
    profile: str, bound_to: str | None
) -> None:
    client = FakeClient()
    client.add(
        PODS,
        pod(
            "b",
            **{PHASE: "Idle", "mochaos.io/pool": "p", "lifecycle.apps.kruise.io/state": "Normal"},
        ),
    )
    client.add(CLAIMS, claim("x", "b", "Bound"))
    client.add(CLAIMS, claim("y"))
    sink = ListSink()
    ctx = context(client, CLAIMS, "y", sink)
    with pytest.raises(ReSync):
        actor(profile).bind(ctx)
    assert client.get(CLAIMS, "y")["spec"].get("podName") == bound_to
    if bound_to is None:
        assert "skip pod claimed by other CNClaim" in sink.msgs()


# ================================================================ on a real cluster

FINALIZER = "matrixorigin.io/cn-claim-manager"


def finalizers(obj: dict | None) -> list[str]:
    return (obj or {}).get("metadata", {}).get("finalizers") or []


def two_bound_claims(scene: Scene, model: ModelProcess) -> tuple[dict, dict]:
    """Claims z and x bound to two pods of pool p (z first), both settled."""
    scene.create_pool("p", max_idle=2)
    scene.idle_count(2)
    scene.create_claim("z", pool="p")
    z = scene.bound_claim("z")
    scene.create_claim("x", pool="p")
    x = scene.bound_claim("x")
    scene.settle(model, "z", "x")
    return z, x


def one_bound_claim(scene: Scene, model: ModelProcess, *, max_idle: int = 2) -> str:
    """Claim x bound and settled in pool p; the name of its pod."""
    scene.create_pool("p", max_idle=max_idle)
    scene.idle_count(max_idle)
    scene.create_claim("x", pool="p")
    pod_name = scene.bound_claim("x")["spec"]["podName"]
    scene.settle(model, "x")
    return pod_name


@pytest.mark.parametrize("profile", ["upstream", "pr592", "fixed"])
def test_b1_b5_delete_claim_whose_pod_another_claim_names(profile: str, run_model, scene) -> None:
    model = run_model(profile)
    z, _ = two_bound_claims(scene, model)
    shared = z["spec"]["podName"]
    scene.migrate("x", scene.pod(shared))  # the agent points x at z's pod; x's Sync relabels it
    scene.wait(
        "x's Sync takes z's pod",
        lambda: labels(scene.pod(shared)).get(CLAIMED_BY) == "x",
        op_seconds=10,
    )
    scene.delete(CLAIMS, "x")
    if profile == "upstream":
        scene.holds(
            "x stays with its finalizer",
            lambda: FINALIZER in finalizers(scene.claim("x")),
            op_seconds=20,
        )
        assert len(model.lines("finalize CNClaim", name="x")) >= 5
        skips = model.lines("skip reclaim, pod still claimed by other CNClaim", name="x")
        assert skips and skips[-1]["pod"] == shared and skips[-1]["holder"] == "z"
        assert labels(scene.pod(shared)).get(CLAIMED_BY) == "x"  # B5: the label stays
        return
    scene.wait("x is gone", lambda: scene.claim("x") is None, op_seconds=5)
    pod_labels = labels(scene.pod(shared))
    assert pod_labels[PHASE] == "Bound"
    if profile == "pr592":
        assert CLAIMED_BY not in pod_labels  # the PR #592 hole: Bound, owned by no one
    else:
        assert pod_labels[CLAIMED_BY] == "z"


@pytest.mark.parametrize("profile", ["upstream", "pr592", "fixed"])
def test_b3_claim_whose_pod_is_deleted(profile: str, run_model, scene) -> None:
    gone = one_bound_claim(scene, run_model(profile))
    scene.delete(PODS, gone)
    if profile == "upstream":
        lost = scene.wait(
            "x turns Lost",
            lambda: (c := scene.claim("x"))["status"].get("phase") == "Lost" and c,
            op_seconds=30,
        )
        assert lost["spec"]["podName"] == gone
        return
    again = scene.wait(
        "x binds another pod",
        lambda: (
            (c := scene.claim("x"))["spec"].get("podName") not in (None, gone)
            and c["status"].get("phase") == "Bound"
            and c
        ),
        op_seconds=60,
    )
    assert labels(scene.pod(again["spec"]["podName"])).get(CLAIMED_BY) == "x"


@pytest.mark.parametrize("profile", ["upstream", "pr592", "fixed"])
def test_b4_pod_deleted_after_its_label_was_removed(profile: str, run_model, scene) -> None:
    model = run_model(profile)
    gone = one_bound_claim(scene, model)
    scene.set_pod_labels(gone, {CLAIMED_BY: None})
    scene.delete(PODS, gone)
    scene.wait("the pod is gone", lambda: scene.pod(gone) is None, op_seconds=30)
    if profile == "upstream":
        passes = len(
            model.lines(
                "object is synced, reconcile will be triggered on next change or resync", name="x"
            )
        )
        scene.holds(
            "x is never told",
            lambda: (
                (c := scene.claim("x"))["spec"].get("podName") == gone
                and c["status"].get("phase") == "Bound"
            ),
            op_seconds=15,
        )
        synced = "object is synced, reconcile will be triggered on next change or resync"
        assert len(model.lines(synced, name="x")) == passes
        return
    scene.wait(
        "x is reconciled and binds another pod",
        lambda: (
            (c := scene.claim("x"))["spec"].get("podName") not in (None, gone)
            and c["status"].get("phase") == "Bound"
        ),
        op_seconds=60,
    )


@pytest.mark.parametrize("profile", ["pre-587", "upstream"])
def test_581_pending_claim_binds_a_migration_target(profile: str, run_model, scene) -> None:
    model = run_model(profile)
    source = one_bound_claim(scene, model, max_idle=1)
    target = scene.wait(
        "the pool refills one idle pod",
        lambda: [p for p in scene.idle_pods() if p["metadata"]["name"] != source],
        op_seconds=60,
    )[0]
    target_name = target["metadata"]["name"]
    # Interleaving B of docs/bugs.md#i581: Y's Bind runs before X's Sync relabels the target.
    model.pause()
    try:
        scene.create_claim("y", pool="p")
        scene.migrate("x", target)
    finally:
        model.resume()
    if profile == "pre-587":
        scene.wait(
            "x and y both name the target",
            lambda: (
                scene.claim("x")["spec"].get("podName") == target_name
                and scene.claim("y")["spec"].get("podName") == target_name
            ),
            op_seconds=30,
        )
        return
    y = scene.bound_claim("y", op_seconds=90)
    assert y["spec"]["podName"] != target_name
    assert scene.claim("x")["spec"]["podName"] == target_name
    skips = model.lines("skip pod claimed by other CNClaim", name="y")
    assert skips and skips[0]["podName"] == target_name and skips[0]["holder"] == "x"


@pytest.mark.parametrize("profile", ["pre-587", "upstream", "pr592", "fixed"])
def test_migration_completes(profile: str, run_model, scene) -> None:
    model = run_model(profile)
    source = one_bound_claim(scene, model)
    target = next(p for p in scene.idle_pods() if p["metadata"]["name"] != source)
    target_name = target["metadata"]["name"]
    scene.migrate("x", target)
    done = scene.wait(
        "the migration completes",
        lambda: (
            (c := scene.claim("x"))["status"].get("store", {}).get("string") == target_name
            and "sourcePod" not in c["spec"]
            and "migrate" not in c["status"]
            and c
        ),
        op_seconds=120,
    )
    assert done["spec"]["podName"] == target_name and done["status"]["phase"] == "Bound"
    assert labels(scene.pod(target_name)).get(CLAIMED_BY) == "x"
    scene.wait(
        "the source drained back to the pool",
        lambda: labels(scene.pod(source)).get(PHASE) == "Idle",
        op_seconds=30,
    )
    assert CLAIMED_BY not in labels(scene.pod(source))
    assert [r["pod"] for r in model.lines("start draining source pod", name="x")] == [source]
    events = scene.api.request("GET", f"/api/v1/namespaces/{scene.namespace}/events")["items"]
    assert any(
        e["reason"] == "ReconcileSuccess"
        and e["involvedObject"]["name"] == "x"
        and e["source"]["component"] == "cn-claim-manager"
        for e in events
    )
