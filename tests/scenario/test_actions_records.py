"""Every write's record is appended before the write is sent and completed when it returns."""

from __future__ import annotations

import pytest
from kubernetes.client.rest import ApiException

from mochaos.errors import InfraError
from mochaos.observe.recorder import Recorder
from mochaos.scenario import actions as actions_module
from mochaos.scenario.actions import Actions


class _Custom:
    """A CustomObjectsApi stand-in: checks the history at the moment the write is sent."""

    def __init__(self, recorder: Recorder, outcome: object) -> None:
        self.recorder = recorder
        self.outcome = outcome
        self.seen: list = []

    def patch_namespaced_custom_object_scale(self, *args):
        self.seen = list(self.recorder.history())
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


@pytest.fixture
def make(monkeypatch):
    monkeypatch.setattr(actions_module, "check_scope", lambda *a: None)

    def build(outcome: object) -> tuple[Actions, Recorder, _Custom]:
        recorder = Recorder(None, namespace="ns", kinds=())  # type: ignore[arg-type]
        acts = Actions(None, namespace="ns", run_id="r", recorder=recorder, operator=None)  # type: ignore[arg-type]
        custom = _Custom(recorder, outcome)
        acts._custom = custom  # type: ignore[assignment]
        return acts, recorder, custom

    return build


def test_the_scale_intent_is_recorded_before_the_write_and_completed_after(make):
    acts, recorder, custom = make({"metadata": {"resourceVersion": "77"}})
    record = acts.scale_claimset("s1", replicas=1)
    (sent,) = custom.seen
    assert (sent.action, sent.name, sent.params, sent.intent) == (
        "scale_claimset", "s1", {"replicas": 1}, True,
    )  # fmt: skip
    assert sent.write_rv is None
    assert record.seq == sent.seq and record.write_rv == 77 and record.error is None
    assert list(recorder.history()) == [record]


def test_a_refused_write_completes_its_record_with_the_error(make):
    acts, recorder, _ = make(ApiException(status=409, reason="Conflict"))
    record = acts.scale_claimset("s1", replicas=1)
    assert (record.write_rv, record.error) == (None, "409 Conflict")
    assert list(recorder.history()) == [record]


@pytest.mark.parametrize(
    ("error", "recorded"),
    [
        (ApiException(status=403, reason="Forbidden"), "403 Forbidden"),
        (ApiException(status=503, reason="Unavailable"), "503 Unavailable"),
        (ConnectionError("reset"), "ConnectionError: reset"),
    ],
)
def test_an_infrastructure_failure_still_completes_the_record(make, error, recorded):
    acts, recorder, _ = make(error)
    with pytest.raises((InfraError, ConnectionError)):
        acts.scale_claimset("s1", replicas=1)
    (record,) = recorder.history()
    assert (record.intent, record.error, record.write_rv) == (True, recorded, None)
