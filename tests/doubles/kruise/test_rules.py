"""The kruise double's pure rules, without a cluster: scale-in order, scale arithmetic,
ordinals, selectors, names, hooks, CRD ownership, heartbeat, the volume stand-in."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mochaos.doubles import DoubleContext, kruise
from mochaos.doubles.kruise import (
    SPEC,
    code_digest,
    crds,
    inplace,
    lifecycle,
    naming,
    readiness,
    volumes,
)
from mochaos.doubles.kruise.api import NotFound
from mochaos.doubles.kruise.cloneset import Diffs, partition_replicas
from mochaos.doubles.kruise.heartbeat import STALE_AFTER, beat, check
from mochaos.doubles.kruise.logs import Log
from mochaos.doubles.kruise.objects import int_or_percent, selector_matches, selector_string
from mochaos.doubles.kruise.ranking import deletion_cost, scale_in_order
from mochaos.doubles.kruise.statefulset import wanted_ordinals
from mochaos.doubles.kruise.workload import Pass

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def ts(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready: bool = True,
    ready_ago: float = 100,
    created_ago: float = 200,
    cost: str | None = None,
    restarts: int = 0,
    state: str = "Normal",
    labels: dict | None = None,
) -> dict:
    conds = [
        {
            "type": "Ready",
            "status": "True" if ready else "False",
            "lastTransitionTime": ts(ready_ago),
        }
    ]
    meta = {
        "name": name,
        "uid": f"uid-{name}",
        "creationTimestamp": ts(created_ago),
        "labels": {"lifecycle.apps.kruise.io/state": state, **(labels or {})},
        "annotations": {} if cost is None else {"controller.kubernetes.io/pod-deletion-cost": cost},
    }
    return {
        "metadata": meta,
        "spec": {"nodeName": node},
        "status": {
            "phase": phase,
            "conditions": conds,
            "containerStatuses": [{"restartCount": restarts}],
        },
    }


def order(pods: list[dict]) -> list[str]:
    return [p["metadata"]["name"] for p in scale_in_order(pods, lambda p: True)]


# -- scale-in order (pod_sorter.go) ----------------------------------------------------------


def test_unscheduled_then_pending_then_not_ready_go_first():
    pods = [
        pod("ready", node="a"),
        pod("notready", node="b", ready=False),
        pod("pending", node="c", phase="Pending", ready=False),
        pod("unscheduled", node="", phase="Pending", ready=False),
    ]
    assert order(pods) == ["unscheduled", "pending", "notready", "ready"]


def test_lower_deletion_cost_goes_first_and_invalid_cost_counts_as_zero():
    pods = [
        pod("c10", node="a", cost="10"),
        pod("cminus", node="b", cost="-3"),
        pod("cplus", node="c", cost="+5"),
        pod("cnone", node="d"),
    ]
    assert deletion_cost(pods[2]) == 0
    assert order(pods)[0] == "cminus"
    assert order(pods)[-1] == "c10"


def test_crowded_node_pods_go_before_lonely_ones():
    """On a node with two pods the less active one gets a rank, which beats the ready time
    (``alone`` became ready last and would otherwise go first)."""
    pods = [
        pod("alone", node="a", ready_ago=1),
        pod("crowd_new", node="b", ready_ago=5),
        pod("crowd_old", node="b", ready_ago=50),
    ]
    assert order(pods) == ["crowd_new", "alone", "crowd_old"]


def test_ties_go_to_the_newest_ready_then_more_restarts_then_newest():
    assert order([pod("old", node="a", ready_ago=50), pod("new", node="b", ready_ago=5)])[0] == (
        "new"
    )
    same = {"ready_ago": 5}
    flaky = pod("flaky", node="a", restarts=3, **same)
    assert order([pod("steady", node="b", **same), flaky])[0] == "flaky"
    young = pod("young", node="a", created_ago=10, **same)
    assert order([pod("elder", node="b", created_ago=99, **same), young])[0] == "young"


def test_unavailable_before_available():
    pods = [pod("avail", node="a"), pod("unavail", node="b")]
    ordered = scale_in_order(pods, lambda p: p["metadata"]["name"] == "avail")
    assert [p["metadata"]["name"] for p in ordered] == ["unavail", "avail"]


# -- scale arithmetic (calculateDiffsWithExpectation) -------------------------------------------


def cs(replicas: int, **spec) -> dict:
    return {"metadata": {"name": "cn"}, "spec": {"replicas": replicas, **spec}}


def diffs(spec: dict, pods: list[dict]) -> Diffs:
    p = Pass(writer=None, pods=None, pvcs=None, revisions=None, events=None, now=NOW)  # type: ignore[arg-type]
    return Diffs(p, spec, pods, "cn-r1", "cn-r1")


def at_rev(p: dict) -> dict:
    p["metadata"]["labels"]["controller-revision-hash"] = "cn-r1"
    return p


def test_scale_up_and_down_numbers():
    three = [at_rev(pod(f"p{i}", node=f"n{i}")) for i in range(3)]
    up = diffs(cs(5), three)
    assert (up.scale_up, up.scale_up_limit, up.scale_down) == (2, 2, 0)
    down = diffs(cs(1), three)
    assert (down.scale_up, down.scale_down) == (0, 2)
    # maxUnavailable defaults to 20% of replicas rounded up (1), plus the 2 surplus pods.
    assert down.delete_ready_limit == 3


def test_specified_deletions_are_not_counted_as_scale_in():
    three = [at_rev(pod(f"p{i}", node=f"n{i}")) for i in range(3)]
    d = diffs(cs(2, scaleStrategy={"podsToDelete": ["p0"]}), three)
    assert d.scale_down == 0
    assert d.delete_ready_limit == 2  # maxUnavailable 1 + (3 pods - 2 replicas) - 0 unavailable


def test_preparing_delete_pods_count_as_unavailable():
    pods = [at_rev(pod("a", node="x")), at_rev(pod("b", node="y", state="PreparingDelete"))]
    d = diffs(cs(1, updateStrategy={"maxUnavailable": 1}), pods)
    assert d.scale_down == 1
    assert d.delete_ready_limit == 1  # 1 + (2 - 1) - 1 PreparingDelete


def test_partition_and_int_or_percent():
    assert partition_replicas(cs(4, updateStrategy={"partition": "50%"})) == 2
    assert partition_replicas(cs(4, updateStrategy={"partition": "99%"})) == 3
    assert partition_replicas(cs(4)) == 0
    assert int_or_percent("20%", 3, round_up=True) == 1
    assert int_or_percent("20%", 3, round_up=False) == 0
    assert int_or_percent(7, 3, round_up=True) == 7


# -- StatefulSet ordinals -----------------------------------------------------------------


@pytest.mark.parametrize(
    "replicas, reserved, wanted",
    [(3, [], [0, 1, 2]), (3, [1], [0, 2, 3]), (2, [0, 5], [1, 2]), (0, [1], [])],
)
def test_wanted_ordinals_skip_reserved(replicas, reserved, wanted):
    sts = {"spec": {"replicas": replicas, "reserveOrdinals": reserved}}
    assert wanted_ordinals(sts) == wanted


def test_parent_and_ordinal():
    assert naming.parent_and_ordinal("pool-log-12") == ("pool-log", 12)
    assert naming.parent_and_ordinal("pool-cn-x7q4m") == ("", -1)


# -- selectors, names -------------------------------------------------------------------------


def test_selector_string_is_sorted_and_typed():
    sel = {
        "matchLabels": {"b": "2", "a": "1"},
        "matchExpressions": [
            {"key": "c", "operator": "In", "values": ["y", "x"]},
            {"key": "d", "operator": "DoesNotExist"},
        ],
    }
    assert selector_string(sel) == "a=1,b=2,c in (x,y),!d"
    assert selector_matches(sel, {"a": "1", "b": "2", "c": "x"})
    assert not selector_matches(sel, {"a": "1", "b": "2", "c": "x", "d": ""})
    assert not selector_matches(None, {"a": "1"})


def test_instance_ids_and_revision_names():
    taken = {naming.random_id() for _ in range(50)}
    fresh = naming.new_instance_id(taken)
    assert fresh not in taken and len(fresh) == 5
    assert set(fresh) <= set(naming.ALPHANUMS)
    tpl = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}}
    assert naming.revision_name("cn", tpl) == naming.revision_name(
        "cn", json.loads(json.dumps(tpl))
    )
    assert naming.revision_name("cn", tpl) != naming.revision_name("cn", {**tpl, "x": 1})
    assert naming.short_hash("pool-x-cn-abc12") == "abc12"


# -- lifecycle hooks ---------------------------------------------------------------------------


def test_hooked_and_all_hooked():
    hook = {"finalizersHandler": ["f1", "f2"], "labelsHandler": {"l": "y"}}
    bare = {"metadata": {"labels": {}, "finalizers": []}}
    one = {"metadata": {"labels": {}, "finalizers": ["f1"]}}
    full = {"metadata": {"labels": {"l": "y"}, "finalizers": ["f1", "f2"]}}
    assert not lifecycle.is_hooked(hook, bare)
    assert lifecycle.is_hooked(hook, one) and not lifecycle.is_all_hooked(hook, one)
    assert lifecycle.is_all_hooked(hook, full)
    assert not lifecycle.is_hooked(None, full) and not lifecycle.is_all_hooked(None, full)
    assert lifecycle.marks_not_ready(
        {"spec": {"lifecycle": {"preDelete": {"markPodNotReady": True}}}}
    )
    assert not lifecycle.marks_not_ready({"spec": {"lifecycle": {"preNormal": {}}}})


# -- CRDs: ours only where nobody else's are --------------------------------------------------


class FakeApi:
    def __init__(self, existing: dict[str, dict]) -> None:
        self.existing = existing
        self.applied: list[str] = []

    def get(self, res, ns, name):
        if name not in self.existing:
            raise NotFound(404, "NotFound", name)
        return self.existing[name]

    def apply(self, res, obj, *, manager):
        self.applied.append(obj["metadata"]["name"])
        self.existing[obj["metadata"]["name"]] = obj
        return obj

    def list(self, res, namespace=None):
        return {"items": []}


def test_crds_are_ours_labelled_and_left_alone_when_foreign(tmp_path):
    ours = crds.definitions()
    assert {c["metadata"]["name"] for c in ours} == {
        "clonesets.apps.kruise.io",
        "statefulsets.apps.kruise.io",
    }
    for crd in ours:
        assert crds.is_ours(crd)
        version = crd["spec"]["versions"][0]
        assert set(version["subresources"]) == {"status", "scale"}
    foreign = {"metadata": {"name": "clonesets.apps.kruise.io", "labels": {}}}
    api = FakeApi({"clonesets.apps.kruise.io": foreign})
    lines = crds.ensure(api, Log(open(tmp_path / "log", "w")))  # noqa: SIM115
    assert api.applied == ["statefulsets.apps.kruise.io"]
    assert "left alone" in lines[0]
    again = crds.ensure(api, Log(open(tmp_path / "log", "w")))  # noqa: SIM115
    assert api.applied == ["statefulsets.apps.kruise.io"], "unchanged CRDs are not re-applied"
    assert "up to date" in again[1]


# -- heartbeat and the DoubleSpec --------------------------------------------------------------


def test_heartbeat_check(tmp_path: Path):
    path = tmp_path / "heartbeat.json"
    assert "not started" in (check(path) or "")
    beat(path, synced=True, errors=0)
    assert "not running" in (check(path) or ""), "the writer (pytest) is no kruise double"
    beat(path, synced=False, errors=0)
    assert "still listing" in (check(path, alive=lambda pid: True) or "")
    beat(path, synced=True, errors=0)
    assert check(path, alive=lambda pid: pid == os.getpid()) is None
    later = time.time() + STALE_AFTER + 1
    assert "silent" in (check(path, now=later, alive=lambda pid: True) or "")


def test_spec_runs_the_module_with_the_context(tmp_path: Path):
    ctx = DoubleContext("c", tmp_path / "kubeconfig", tmp_path / "state", tmp_path / "log")
    argv = SPEC.command(ctx)
    assert argv[1:3] == ["-m", "mochaos.doubles.kruise"]
    assert argv[argv.index("--kubeconfig") + 1] == str(ctx.kubeconfig)
    assert argv[argv.index("--state-dir") + 1] == str(ctx.state_dir)
    assert SPEC.name == "kruise" and SPEC.prepare is not None
    assert SPEC.health(ctx) is not None
    assert argv[argv.index("--code") + 1] == code_digest(Path(kruise.__file__).parent)


def test_the_code_digest_follows_the_double_s_source(tmp_path: Path):
    (tmp_path / "crds").mkdir()
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "crds" / "c.yaml").write_text("kind: C\n")
    (tmp_path / "notes.txt").write_text("not code")
    first = code_digest(tmp_path)
    (tmp_path / "notes.txt").write_text("still not code")
    assert code_digest(tmp_path) == first
    (tmp_path / "crds" / "c.yaml").write_text("kind: D\n")
    assert code_digest(tmp_path) != first
    (tmp_path / "crds" / "c.yaml").write_text("kind: C\n")
    assert code_digest(tmp_path) == first
    (tmp_path / "a.py").write_text("x = 2\n")
    assert code_digest(tmp_path) != first


# -- the volume stand-in -----------------------------------------------------------------------


def test_volume_for_a_classless_pending_claim():
    pvc = {
        "metadata": {"name": "mo-data-log-0", "namespace": "ns", "uid": "u1"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Pending"},
    }
    assert volumes.wants_volume(pvc)
    pv = volumes.volume_for(pvc)
    assert pv["spec"]["claimRef"] == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "namespace": "ns",
        "name": "mo-data-log-0",
        "uid": "u1",
    }
    assert pv["spec"]["capacity"] == {"storage": "1Gi"}
    classy = {**pvc, "spec": {**pvc["spec"], "storageClassName": "fast"}}
    assert not volumes.wants_volume(classy)
    bound = {**pvc, "status": {"phase": "Bound"}}
    assert not volumes.wants_volume(bound)


# -- in-place updates and the Ready stand-in --------------------------------------------------


def template(image: str = "img:1", **meta) -> dict:
    return {"metadata": meta, "spec": {"containers": [{"name": "main", "image": image}]}}


def test_in_place_spec_covers_labels_annotations_and_images_only():
    old = template(labels={"a": "1", "gone": "x"}, annotations={"k": "v1"})
    new = template("img:2", labels={"a": "2"}, annotations={"k": "v2", "n": "y"})
    spec = inplace.calculate_spec(old, new, "cn-r2", grace_seconds=10)
    assert spec is not None
    assert spec.images == {"main": "img:2"}
    assert spec.labels == {"a": "2", "gone": None}
    assert spec.annotations == {"k": "v2", "n": "y"}
    assert spec.grace_seconds == 10
    env = template()
    env["spec"]["containers"][0]["env"] = [{"name": "X", "value": "1"}]
    assert inplace.calculate_spec(old, env, "cn-r3", grace_seconds=0) is None
    assert inplace.calculate_spec(None, new, "cn-r2", grace_seconds=0) is None
    assert inplace.UpdateSpec.load(spec.dump()) == spec


def test_kubelet_ready_follows_containers_and_gates():
    pod = {
        "spec": {"readinessGates": [{"conditionType": "G"}]},
        "status": {"conditions": [{"type": "ContainersReady", "status": "True"}]},
    }
    assert readiness.kubelet_ready(pod)[:2] == ("False", "ReadinessGatesNotReady")
    pod["status"]["conditions"].append({"type": "G", "status": "True"})
    assert readiness.kubelet_ready(pod) == ("True", "", "")
    pod["status"]["conditions"][0]["status"] = "False"
    assert readiness.kubelet_ready(pod)[:2] == ("False", "ContainersNotReady")
    assert readiness.kubelet_ready({"status": {}}) is None
