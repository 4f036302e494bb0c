"""Scope: chaos writes only in namespaces this run created, and labels all it creates."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.ctrl.objects import GROUP, RUN_ID_LABEL, VERSION
from mochaos.ctrl.rest import Kube
from mochaos.faults import delete_claim
from mochaos.observe.history import History, State
from mochaos.observe.recorder import Recorder
from mochaos.scenario._gate import Gate
from mochaos.scenario._topology import cn_claim
from mochaos.scenario._writes import CHAOS, ScopeError, Writes

from support.child_runs import needs_binaries

LABELLED_SCENARIO = "test_double_binding_during_migration"
"""A scenario creating every kind: a pool (its pods), a claim set (its claims), a claim."""
CREATED_KINDS = ("CNPool", "CNClaimSet", "CNClaim", "Pod")


def create_victim(kube, namespace: str) -> dict:
    """A CNClaim in ``namespace``; no operator watches it, so only chaos could change it."""
    claim = cn_claim("victim", run_id="someone", pool="pool")
    return client.CustomObjectsApi(kube).create_namespaced_custom_object(
        GROUP, VERSION, namespace, "cnclaims", claim
    )


def read_victim(kube, namespace: str) -> dict:
    return client.CustomObjectsApi(kube).get_namespaced_custom_object(
        GROUP, VERSION, namespace, "cnclaims", "victim"
    )


@pytest.fixture(params=["unlabelled", "another-run"])
def foreign(request: pytest.FixtureRequest, kube) -> Iterator[str]:
    """A namespace this run did not create: no run-id label, or another run's."""
    core = client.CoreV1Api(kube)
    name = f"mc-safety-foreign-{secrets.token_hex(2)}"
    labels = {RUN_ID_LABEL: "another-run"} if request.param == "another-run" else {}
    core.create_namespace({"metadata": {"name": name, "labels": labels}})
    yield name
    try:
        core.delete_namespace(name)
    except ApiException as err:
        assert err.status == 404


def writes_in(kube, namespace: str, run_id: str) -> Writes:
    recorder = Recorder(kube, namespace=namespace)
    return Writes(Kube(kube.configuration, user_agent=CHAOS), namespace=namespace,
                  run_id=run_id, recorder=recorder, gate=Gate(recorder), operator=None,
                  component="chaos")  # fmt: skip


def test_an_action_outside_the_runs_namespaces_raises_and_writes_nothing(
    kube, mochaos, operator_target, foreign
):
    before = create_victim(kube, foreign)
    with pytest.raises(ScopeError, match=f"namespace {foreign} was not created by this run"):
        writes_in(kube, foreign, mochaos.run_id).inject(delete_claim("victim"), state=State())
    after = read_victim(kube, foreign)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "deletionTimestamp" not in after["metadata"]


def test_the_same_action_in_the_runs_own_namespace_does_write(
    kube, mochaos, operator_target, namespace
):
    # The control of the test above: only the namespace's label differs.
    create_victim(kube, namespace)
    record = writes_in(kube, namespace, mochaos.run_id).inject(delete_claim("victim"),
                                                               state=State())  # fmt: skip
    assert record.error is None
    with pytest.raises(ApiException) as gone:
        read_victim(kube, namespace)
    assert gone.value.status == 404


@needs_binaries
def test_every_object_a_scenario_creates_carries_the_run_id(child):
    run = child("suites", "-k", LABELLED_SCENARIO, "--operator", "model:fixed")
    assert run.case(LABELLED_SCENARIO).outcome == "passed", run.output[-3000:]
    run_dir = run.run_dir()
    run_id = json.loads((run_dir / "summary.json").read_text())["run_id"]
    (folder,) = (p for p in run_dir.iterdir() if p.name.endswith(f".{LABELLED_SCENARIO}"))
    history = History.from_jsonl(folder / "history.jsonl")
    seen: dict[str, set[str]] = {kind: set() for kind in CREATED_KINDS}
    for change in history.changes():
        if change.kind not in CREATED_KINDS or change.event == "DELETED":
            continue
        labels = change.obj["metadata"].get("labels") or {}
        assert labels.get(RUN_ID_LABEL) == run_id, (change.kind, change.name, labels)
        seen[change.kind].add(change.name)
    # Pools, claim sets, standalone claims, claims of a set and pods were all checked.
    assert all(seen.values()), seen
    assert len(seen["CNClaim"]) >= 2 and len(seen["Pod"]) >= 2, seen
