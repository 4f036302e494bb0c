"""The recorder's barrier lists each kind to know how far the history must reach; in an
apiserver outage's aftermath that LIST is refused for a while ("storage is
(re)initializing"), and the barrier tries again until its own timeout."""

from __future__ import annotations

import threading

import pytest

from mochaos.ctrl.listwatch import ListWatch
from mochaos.ctrl.rest import PODS, ApiError, Unreachable
from mochaos.errors import InfraError
from mochaos.observe.recorder import Recorder

from support.scripted_kube import ScriptedKube, listed


def _recorder(*lists) -> Recorder:
    rec = Recorder(None, namespace="ns", kinds=())  # type: ignore[arg-type]
    kube = ScriptedKube(lists=list(lists), watches=[], stop=threading.Event())
    rec.watchers.append(ListWatch(kube, PODS, "ns", handle=lambda e: None, stop=threading.Event()))
    return rec


def test_a_list_refused_after_an_outage_is_tried_again():
    initializing = ApiError(500, "InternalError", "storage is (re)initializing")
    refused = Unreachable(0, "Unreachable", "connection refused")
    rec = _recorder(refused, initializing, listed(0))
    rec.barrier(timeout=10)
    assert rec.watchers[0]._kube.lists == []


def test_an_apiserver_that_never_answers_ends_the_barrier_as_an_infrastructure_error():
    refused = Unreachable(0, "Unreachable", "connection refused")
    rec = _recorder(*[refused] * 100)
    with pytest.raises(InfraError, match="could not list Pod to catch up: connection refused"):
        rec.barrier(timeout=0.3)
