"""One reconcile pass follows the operator's runtime (docs/operator-behaviour.md §1.1-§1.3):
finalizer first, status written before an action and on errors, ReSync and Conflict
requeue silently, other errors emit ReconcileFail and back off, Finalize retries every 2 s.
"""

from __future__ import annotations

import pytest

from mochaos.ctrl.rest import CLAIMS, Conflict, NotFound
from mochaos.model.logs import Logger
from mochaos.model.runtime.context import OperatorError, ReSync, wrap
from mochaos.model.runtime.reconciler import BACKOFF, FORGET, Reconciler, Result
from mochaos.model.timing import Timing

from ..fakes import FakeClient, ListSink, claim

FINALIZER = "matrixorigin.io/cn-claim-manager"


class Cache:
    def __init__(self, client: FakeClient) -> None:
        self.client = client

    def get(self, name: str):
        try:
            return self.client.get(CLAIMS, name)
        except NotFound:
            return None


class Events:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str]] = []

    def emit(self, obj, kind, *, component, type_, reason, message) -> None:
        self.sent.append((type_, reason, message))


class Actor:
    def __init__(self, observe=None, finalize=None) -> None:
        self._observe = observe or (lambda ctx: None)
        self._finalize = finalize or (lambda ctx: True)

    def observe(self, ctx):
        return self._observe(ctx)

    def finalize(self, ctx):
        return self._finalize(ctx)


class Counting(FakeClient):
    def __init__(self) -> None:
        super().__init__()
        self.status_writes = 0
        self.fail_status: Exception | None = None

    def update_status(self, kind, obj) -> None:
        self.status_writes += 1
        if self.fail_status is not None:
            raise self.fail_status
        super().update_status(kind, obj)


def setup(actor: Actor, *, deleting: bool = False, finalizers=(FINALIZER,)):
    client = Counting()
    obj = claim("x", "p", "Bound")
    obj["metadata"]["finalizers"] = list(finalizers)
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    client.add(CLAIMS, obj)
    sink, events = ListSink(), Events()
    rec = Reconciler(
        name="cn-claim-manager",
        kind=CLAIMS,
        cache=Cache(client),
        actor=actor,
        client=client,
        timing=Timing(scale=0.5),
        log=Logger(sink),
        events=events,
    )
    return rec, client, sink, events


RETRY = Result(requeue=True, after=1.0)  # 2 s at scale 0.5


def test_synced_object_is_forgotten_with_success_event_and_status_write() -> None:
    rec, client, sink, events = setup(Actor(), finalizers=())
    assert rec.reconcile("x") == FORGET
    assert client.get(CLAIMS, "x")["metadata"]["finalizers"] == [FINALIZER]
    assert sink.msgs() == ["object is synced, reconcile will be triggered on next change or resync"]
    assert events.sent == [("Normal", "ReconcileSuccess", "object is synced")]
    assert client.status_writes == 1


def test_an_action_runs_after_the_status_write_and_retries() -> None:
    order = []
    rec, client, _, _ = setup(
        Actor(observe=lambda ctx: lambda c: order.append(client.status_writes))
    )
    assert rec.reconcile("x") == RETRY
    assert order == [1]


@pytest.mark.parametrize(
    ("error", "result"),
    [
        (ReSync("wait pod to bound", 2.5), Result(requeue=True, after=2.5)),
        (ReSync("direct pod is idle"), BACKOFF),
        (Conflict(409, "Conflict", "modified"), RETRY),
    ],
)
def test_resync_and_conflict_requeue_silently(error, result) -> None:
    def observe(ctx):
        raise wrap(error, "error claim idle CN") from error

    rec, client, sink, events = setup(Actor(observe=observe))
    assert rec.reconcile("x") == result
    assert events.sent == [] and sink.records == []
    assert client.status_writes == 1


def test_other_errors_emit_reconcile_fail_and_back_off() -> None:
    def observe(ctx):
        raise OperatorError("unknown pod phase: ")

    rec, _, sink, events = setup(Actor(observe=observe))
    assert rec.reconcile("x") == BACKOFF
    assert events.sent == [
        ("Warning", "ReconcileFail", "failed calling actions, error: unknown pod phase: ")
    ]
    (record,) = sink.records
    assert record["level"] == "error" and record["error"] == "unknown pod phase: "
    assert "unknown pod phase" in record["msg"]


def test_a_failed_status_write_retries() -> None:
    rec, client, _, _ = setup(Actor())
    client.fail_status = Conflict(409, "Conflict", "modified")
    assert rec.reconcile("x") == RETRY


def test_unfinished_finalize_retries_every_default_requeue() -> None:
    rec, client, sink, _ = setup(Actor(finalize=lambda ctx: False), deleting=True)
    assert rec.reconcile("x") == RETRY
    assert sink.msgs() == ["does not complete finalizing, retry"]
    assert client.get(CLAIMS, "x")["metadata"]["finalizers"] == [FINALIZER]


def test_finished_finalize_removes_the_finalizer() -> None:
    rec, client, sink, _ = setup(Actor(), deleting=True)
    assert rec.reconcile("x") == FORGET
    assert sink.msgs() == ["resource finalizing complete, remove finalizer"]
    assert client.get(CLAIMS, "x")["metadata"]["finalizers"] == []


def test_finalize_error_emits_finalize_fail() -> None:
    def finalize(ctx):
        raise OperatorError("boom")

    rec, _, _, events = setup(Actor(finalize=finalize), deleting=True)
    assert rec.reconcile("x") == BACKOFF
    assert events.sent == [("Warning", "FinalizeFail", "failed to finalize object, error: boom")]


def test_deleting_object_without_our_finalizer_is_left_alone() -> None:
    called = []
    rec, _, _, _ = setup(Actor(finalize=lambda ctx: called.append(1)), deleting=True, finalizers=())
    assert rec.reconcile("x") == FORGET
    assert called == []


def test_missing_object_is_forgotten() -> None:
    rec, *_ = setup(Actor())
    assert rec.reconcile("nope") == FORGET
