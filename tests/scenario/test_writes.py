"""The one write path: every write's record is appended before it is sent and completed
when it returns; a refused write makes the scenario inconclusive with the apiserver's
answer (unless expected), one that got no answer is an infrastructure error; a fault is
applied as its kind says."""

from __future__ import annotations

import pytest

from mochaos.ctrl.objects import CLAIMED_BY_LABEL
from mochaos.ctrl.rest import ApiError, Conflict, NotFound, Unreachable
from mochaos.errors import Inconclusive, InfraError, UsageError
from mochaos.faults import delete_pod, kill_operator, remove_label, scale_claimset, scale_in
from mochaos.observe.history import Change, State

from support.writes_standin import at_rv, scripted_writes


def test_the_intent_is_recorded_before_the_write_and_completed_after():
    writes, recorder, kube = scripted_writes(at_rv(77))
    record = writes.inject(scale_claimset("s1", replicas=1), state=State())
    (sent,) = kube.seen[0]
    assert (sent.action, sent.name, sent.params, sent.intent, sent.fault) == (
        "scale_claimset", "s1", {"replicas": 1}, True, "scale",
    )  # fmt: skip
    assert sent.write_rv is None
    assert record.seq == sent.seq and record.write_rv == 77 and record.error is None
    assert list(recorder.history()) == [record]
    method, path, body = kube.sent[0]
    assert (method, path, body) == (
        "PATCH", "/apis/core.matrixorigin.io/v1alpha1/namespaces/ns/cnclaimsets/s1/scale",
        {"spec": {"replicas": 1}},
    )  # fmt: skip


def test_a_refused_fault_is_inconclusive_with_the_apiservers_answer():
    writes, recorder, _ = scripted_writes(NotFound(404, "NotFound", 'pods "gone" not found'))
    with pytest.raises(Inconclusive) as err:
        writes.inject(delete_pod("gone"), state=State())
    assert str(err.value) == (
        "delete_pod Pod/gone did not land: the apiserver answered 404 NotFound: "
        'pods "gone" not found'
    )
    (record,) = recorder.history()
    assert (record.write_rv, record.error) == (None, '404 NotFound: pods "gone" not found')


def test_a_refusal_the_caller_expects_is_returned_as_its_record():
    writes, _, _ = scripted_writes(Conflict(409, "Conflict", "modified"))
    record = writes.as_workload(scale_claimset, "s1", replicas=0, tolerate=(409,))
    assert (record.error, record.fault) == ("409 Conflict: modified", None)


@pytest.mark.parametrize(
    ("error", "recorded"),
    [
        (ApiError(403, "Forbidden", ""), "403 Forbidden"),
        (ApiError(503, "ServiceUnavailable", "etcd"), "503 ServiceUnavailable: etcd"),
        (Unreachable(0, "Unreachable", "PATCH x: reset"), "0 Unreachable: PATCH x: reset"),
    ],
)
def test_an_infrastructure_failure_still_completes_the_record(error, recorded):
    writes, recorder, _ = scripted_writes(error)
    with pytest.raises(InfraError):
        writes.inject(scale_claimset("s1", replicas=1), state=State())
    (record,) = recorder.history()
    assert (record.intent, record.error, record.write_rv) == (True, recorded, None)


def test_a_derived_parameter_is_read_from_the_target_as_it_is():
    writes, _, kube = scripted_writes(at_rv(5))
    state = State()
    state.apply(Change(1, 0.0, "CNClaimSet", "ADDED", "ns", "s1", 3,
                       {"metadata": {"name": "s1"}, "spec": {"replicas": 2}}))  # fmt: skip
    record = writes.inject(scale_in("s1"), state=state)
    assert kube.sent[0][2] == {"spec": {"replicas": 1}}
    assert (record.action, record.fault, record.params) == ("scale_claimset", "scale-in",
                                                             {"replicas": 1})  # fmt: skip
    with pytest.raises(Inconclusive, match="scale-in s2: CNClaimSet s2 is gone"):
        writes.inject(scale_in("s2"), state=state)


def test_a_label_removal_is_a_merge_patch_that_deletes_the_key():
    writes, _, kube = scripted_writes(at_rv(5))
    writes.inject(remove_label("pod-a"), state=State())
    assert kube.sent[0] == ("PATCH", "/api/v1/namespaces/ns/pods/pod-a",
                            {"metadata": {"labels": {CLAIMED_BY_LABEL: None}}})  # fmt: skip


def test_an_operator_fault_without_an_operator_is_a_usage_error():
    writes, recorder, _ = scripted_writes()
    with pytest.raises(UsageError, match="kill needs an operator target"):
        writes.inject(kill_operator(), state=State())
    assert list(recorder.history()) == []


def test_a_fault_kind_checks_its_target_and_parameters():
    with pytest.raises(UsageError, match="fault delete-pod takes a Pod name"):
        delete_pod()
    with pytest.raises(UsageError, match="fault kill takes no target"):
        kill_operator("pod-a")
    with pytest.raises(UsageError, match="fault scale: missing replicas"):
        scale_claimset("s1")
    with pytest.raises(UsageError, match="fault scale: unknown replica"):
        scale_claimset("s1", replicas=1, replica=2)
