"""CNClaimSet controller: owned/lost split, every scale-in tie-breaker, the PR #592 switch,
and B2 (scale-in during a migration) on a real cluster.
"""

from __future__ import annotations

import time

import pytest

from mochaos.ctrl.rest import CLAIMS, CLAIMSETS, PODS, Obj
from mochaos.model.claimset import ClaimSetActor, scale_in_order, split_claims
from mochaos.model.profiles import get_profile
from mochaos.model.timing import Timing, parse_time

from .fakes import FakeClient, ListSink, claim, context, pod
from .scene import CLAIMED_BY, labels

SEL = {"matchLabels": {"matrixorigin.io/claimset": "cs"}}


def member(name: str, pod_name: str = "", phase: str = "Bound", created: str = "") -> dict:
    c = claim(name, pod_name, phase)
    c["metadata"]["labels"] = {
        "matrixorigin.io/claimset": "cs",
        "claim.matrixorigin.io/instance-id": name,
    }
    c["metadata"]["creationTimestamp"] = created or "2026-01-01T00:00:00Z"
    return c


def order(*pairs) -> list[str]:
    return [c["metadata"]["name"] for c, _ in scale_in_order(list(pairs))]


def p(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready: bool = True,
    cost=None,
    created="2026-01-01T00:00:00Z",
):
    obj = pod(name)
    obj["spec"]["nodeName"] = node
    obj["status"]["phase"] = phase
    obj["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    obj["metadata"]["creationTimestamp"] = created
    if cost is not None:
        obj["metadata"]["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
    return obj


# ---------------------------------------------------------------- owned / lost (§5.1)


def test_split_owned_and_lost() -> None:
    deleting = member("d")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    no_id = member("n")
    del no_id["metadata"]["labels"]["claim.matrixorigin.io/instance-id"]
    other = claim("o")
    owned, lost = split_claims(
        [member("a"), member("l", phase="Lost"), deleting, no_id, other], SEL
    )
    assert [c["metadata"]["name"] for c in owned] == ["a"]
    assert [c["metadata"]["name"] for c in lost] == ["l", "d", "n"]
    assert split_claims([member("a")], None) == ([], [])


# ---------------------------------------------------------------- scale-in order (§5.4)


def test_claims_without_pod_go_first() -> None:
    assert order((member("with"), p("a")), (member("without"), None)) == ["without", "with"]


def test_claim_phase_order() -> None:
    pairs = [
        (member(ph or "empty", phase=ph), p("x")) for ph in ("Bound", "Outdated", "Lost", "Pending")
    ]
    assert order(*pairs) == ["Pending", "Lost", "Outdated", "Bound"]
    assert order((member("b"), p("x")), (member("empty", phase=""), p("y"))) == ["empty", "b"]


def test_two_claims_without_pod_newer_first() -> None:
    old = member("old", created="2026-01-01T00:00:00Z")
    new = member("new", created="2026-01-01T00:00:05Z")
    assert order((old, None), (new, None)) == ["new", "old"]


def test_unscheduled_pod_first() -> None:
    assert order((member("s"), p("a")), (member("u"), p("b", node=""))) == ["u", "s"]


def test_pod_phase_order_pending_failed_running() -> None:
    pairs = [(member(ph), p(ph, phase=ph)) for ph in ("Running", "Failed", "Pending")]
    assert order(*pairs) == ["Pending", "Failed", "Running"]
    # any other phase counts like Pending
    assert order((member("r"), p("a")), (member("s"), p("b", phase="Succeeded"))) == ["s", "r"]


def test_not_ready_pod_first() -> None:
    assert order((member("r"), p("a")), (member("n"), p("b", ready=False))) == ["n", "r"]


def test_lower_deletion_cost_first_unparsable_is_zero() -> None:
    assert order((member("hi"), p("a", cost="5")), (member("lo"), p("b", cost="1"))) == ["lo", "hi"]
    assert order((member("hi"), p("a", cost="1")), (member("bad"), p("b", cost="x"))) == [
        "bad",
        "hi",
    ]


def test_newer_pod_first_in_whole_seconds() -> None:
    old = p("a", created="2026-01-01T00:00:00Z")
    new = p("b", created="2026-01-01T00:00:02Z")
    assert order((member("old"), old), (member("new"), new)) == ["new", "old"]
    close = p("c", created="2026-01-01T00:00:00.900000Z")
    assert order((member("old"), old), (member("close"), close)) == ["old", "close"]


# ---------------------------------------------------------------- scale-in per profile (B2)


@pytest.mark.parametrize(("profile", "victim"), [("upstream", "m"), ("pr592", "o"), ("fixed", "o")])
def test_scale_in_of_a_set_with_a_migrating_claim(profile: str, victim: str) -> None:
    client = FakeClient()
    client.add(
        CLAIMSETS,
        {
            "metadata": {"name": "cs"},
            "spec": {"replicas": 1, "selector": SEL},
            "status": {"replicas": 2},
        },
    )
    client.add(PODS, p("old", created="2026-01-01T00:00:00Z"))
    client.add(PODS, p("target", created="2026-01-01T00:01:00Z"))
    migrating = member("m", "target")
    migrating["spec"]["sourcePod"] = {"podName": "src"}
    client.add(CLAIMS, migrating)
    client.add(CLAIMS, member("o", "old"))
    sink = ListSink()
    ClaimSetActor(profile=get_profile(profile), timing=Timing()).sync(
        context(client, CLAIMSETS, "cs", sink)
    )
    assert client.deleted == [victim]
    skipped = "skip migrating claims from scale-in" in sink.msgs()
    assert skipped == (profile != "upstream")
    assert ("sort claims to scale-in" in sink.msgs()) == (profile == "upstream")


def test_scale_out_names_claims_after_the_set() -> None:
    client = FakeClient()
    client.add(
        CLAIMSETS,
        {
            "metadata": {"name": "cs"},
            "spec": {
                "replicas": 2,
                "selector": SEL,
                "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"selector": {}}},
            },
            "status": {},
        },
    )
    ctx = context(client, CLAIMSETS, "cs", ListSink())
    ClaimSetActor(profile=get_profile("upstream"), timing=Timing()).sync(ctx)
    made = client.list(CLAIMS)
    assert len(made) == 2
    for c in made:
        instance = c["metadata"]["labels"]["claim.matrixorigin.io/instance-id"]
        assert c["metadata"]["name"] == f"cs-{instance}" and len(instance) == 5
        assert c["metadata"]["labels"]["app"] == "a"
        assert c["spec"]["ownerName"] == "cs"
    assert ctx.obj["status"]["replicas"] == 2
    assert (
        ctx.obj["status"]["labelSelector"]
        == "matrixorigin.io/claimset=cs,pool.matrixorigin.io/phase=Bound"
    )


# ================================================================ on a real cluster


@pytest.mark.parametrize("profile", ["upstream", "pr592", "fixed"])
def test_b2_scale_in_during_a_migration(profile: str, run_model, scene) -> None:
    model = run_model(profile)
    scene.create_pool("p", max_idle=2)
    scene.idle_count(2)
    scene.create_claimset("cs", pool="p", replicas=2)
    members = scene.wait(
        "both claims of the set bound",
        lambda: (
            len(bound := [c for c in scene.claims() if c.get("status", {}).get("phase") == "Bound"])
            == 2
            and bound
        ),
        op_seconds=60,
    )
    names = [c["metadata"]["name"] for c in members]
    scene.settle(model, *names, "cs")
    newest_bound = max(
        parse_time(scene.pod(c["spec"]["podName"])["metadata"]["creationTimestamp"])
        for c in members
    )
    # the pool refills its idle pods after the binds: a refill is the newest pod
    target = _idle_pod_created_after(scene, newest_bound)
    migrating, other = names
    scene.migrate(migrating, target)
    scene.wait(
        "the migrating claim takes its target",
        lambda: labels(scene.pod(target["metadata"]["name"])).get(CLAIMED_BY) == migrating,
        op_seconds=10,
    )
    scene.scale_claimset("cs", 1)
    victim, survivor = (migrating, other) if profile == "upstream" else (other, migrating)
    scene.wait(
        f"scale-in deletes {victim}",
        lambda: (c := scene.claim(victim)) is None or c["metadata"].get("deletionTimestamp"),
        op_seconds=10,
    )
    survivor_claim = scene.claim(survivor)
    assert survivor_claim and not survivor_claim["metadata"].get("deletionTimestamp")
    if profile == "upstream":
        assert model.lines("sort claims to scale-in", name="cs")
    else:
        assert model.lines("skip migrating claims from scale-in", name="cs")[0]["count"] == 1


def _idle_pod_created_after(scene, newest_bound: float) -> Obj:
    """An idle pod whose creationTimestamp is a second past ``newest_bound`` (timestamps
    have one-second resolution: upstream's newest-first sort must tell it apart). On a
    fast run the pool's refill lands in the bound pods' own second: once the clock has left
    that second, the idle pods of it are deleted and the pool creates later ones."""

    def newer() -> list[Obj]:
        return [
            p
            for p in scene.idle_pods()
            if parse_time(p["metadata"]["creationTimestamp"]) >= newest_bound + 1
        ]

    scene.idle_count(1)
    if not newer():
        scene.wait(
            "the clock past the bound pods' second",
            lambda: time.time() >= newest_bound + 1,
            op_seconds=0,
        )
        for pod in scene.idle_pods():
            scene.delete(PODS, pod["metadata"]["name"])
    return scene.wait("an idle pod newer than both bound pods", newer, op_seconds=60)[0]
