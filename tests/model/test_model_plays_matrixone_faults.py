"""The model's own MatrixOne made unreachable by a scenario: its HAKeeper calls fail as the
operator's client fails (at once when refused, after its discovery timeout when hanging, at
once when it comes back mid-hang), its store cache keeps what it held, and its target refuses
a component the model does not play."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from mochaos.ctrl.mo_components import HAKEEPER, HANG, LOCK_SERVICE, REFUSE, query_of
from mochaos.ctrl.rest import CLAIMS, PODS
from mochaos.errors import UsageError
from mochaos.model.claim import ClaimActor
from mochaos.model.hakeeper import DRAINING, HAKeeper, StoreCache, store_uuid
from mochaos.model.matrixone_faults import Faults, Unreachable, write_fault
from mochaos.model.profiles import get_profile
from mochaos.model.runtime.context import OperatorError
from mochaos.model.timing import Timing
from mochaos.operator.targets.model import ModelFaults

from .fakes import FakeClient, ListSink, claim, context, pod

POD = {"metadata": {"name": "p-1", "namespace": "ns"}, "spec": {}, "status": {"podIP": "10.0.0.1"}}


def test_a_component_down_in_the_file_is_down_for_the_model(tmp_path: Path) -> None:
    path = tmp_path / "faults.json"
    faults = Faults(path, hang=1.0)
    assert faults.how(HAKEEPER) is None  # no file: nothing down
    write_fault(path, HAKEEPER, REFUSE)
    write_fault(path, query_of("p-1"), HANG)
    assert (faults.how(HAKEEPER), faults.how("query/p-1")) == (REFUSE, HANG)
    write_fault(path, HAKEEPER, None)
    assert faults.how(HAKEEPER) is None and faults.how("query/p-1") == HANG
    assert Faults(None, hang=1.0).how(HAKEEPER) is None


def test_a_refused_call_fails_at_once_a_hanging_one_after_its_wait(tmp_path: Path) -> None:
    path = tmp_path / "faults.json"
    faults = Faults(path, hang=0.5)
    faults.call(HAKEEPER)  # up: returns
    write_fault(path, HAKEEPER, REFUSE)
    started = time.monotonic()
    with pytest.raises(Unreachable, match="connection refused"):
        faults.call(HAKEEPER)
    assert time.monotonic() - started < 0.2
    write_fault(path, HAKEEPER, HANG)
    started = time.monotonic()
    with pytest.raises(Unreachable, match="context deadline exceeded"):
        faults.call(HAKEEPER)
    assert time.monotonic() - started >= 0.5


def test_a_hanging_call_fails_as_soon_as_the_component_is_back(tmp_path: Path) -> None:
    path = tmp_path / "faults.json"
    faults = Faults(path, hang=30.0)
    write_fault(path, HAKEEPER, HANG)
    threading.Timer(0.3, write_fault, (path, HAKEEPER, None)).start()
    started = time.monotonic()
    with pytest.raises(Unreachable, match="connection reset"):
        faults.call(HAKEEPER)
    assert time.monotonic() - started < 5


def test_hakeeper_down_fails_its_calls_and_its_cache_keeps_what_it_held(tmp_path: Path) -> None:
    path = tmp_path / "faults.json"
    faults = Faults(path, hang=0.1)
    stop = threading.Event()
    stores = [store_uuid(POD)]
    reach = lambda: faults.call(HAKEEPER)  # noqa: E731
    hakeeper = HAKeeper(StoreCache(stores=lambda: stores, refresh=0.05, stop=stop, reach=reach),
                        faults)  # fmt: skip
    try:
        write_fault(path, HAKEEPER, REFUSE)
        with pytest.raises(Unreachable):  # the client set cannot be made: no cache
            hakeeper.registered(POD)
        with pytest.raises(Unreachable):
            hakeeper.patch_store(POD, state=DRAINING, labels=None)
        write_fault(path, HAKEEPER, None)
        assert hakeeper.registered(POD)
        assert hakeeper.patch_store(POD, state=DRAINING, labels=None).work_state == DRAINING
        write_fault(path, HAKEEPER, REFUSE)
        stores.clear()  # HAKeeper would say the store is gone, but the cache cannot refill
        time.sleep(0.3)
        assert hakeeper.registered(POD)
        write_fault(path, HAKEEPER, None)
        deadline = time.monotonic() + 5
        while hakeeper.registered(POD) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not hakeeper.registered(POD)  # refilled once HAKeeper is back
    finally:
        stop.set()


def test_the_model_target_plays_hakeeper_only(tmp_path: Path) -> None:
    faults = ModelFaults(tmp_path / "faults.json")
    assert faults.components == (HAKEEPER,)
    assert faults.down(HAKEEPER, how=HANG) == "the model's hakeeper"
    assert Faults(faults.path, hang=1).how(HAKEEPER) == HANG
    faults.up(HAKEEPER)
    assert Faults(faults.path, hang=1).how(HAKEEPER) is None
    with pytest.raises(UsageError, match="plays HAKeeper only"):
        faults.down(LOCK_SERVICE, how=REFUSE)
    with pytest.raises(UsageError, match="plays HAKeeper only"):
        faults.down(query_of("p-1"), how=REFUSE)


def test_a_finalize_with_hakeeper_down_fails_and_leaves_the_pod_bound(tmp_path: Path) -> None:
    """reclaimCN's PatchCNStore fails: an error (the runtime backs off), the pod untouched."""
    path = tmp_path / "faults.json"
    faults = Faults(path, hang=0.1)
    hakeeper = HAKeeper(StoreCache(stores=list, refresh=15, stop=threading.Event()), faults)
    actor = ClaimActor(profile=get_profile("fixed"), timing=Timing(), hakeeper=hakeeper)
    client = FakeClient()
    bound = {"pool.matrixorigin.io/phase": "Bound", "pool.matrixorigin.io/claimed-by": "x"}
    client.add(PODS, pod("p", **bound))
    client.add(CLAIMS, claim("x", "p", "Bound"))
    write_fault(path, HAKEEPER, REFUSE)
    with pytest.raises(OperatorError, match="hakeeper: connection refused"):
        actor.finalize(context(client, CLAIMS, "x", ListSink()))
    assert client.get(PODS, "p")["metadata"]["labels"] == bound
    write_fault(path, HAKEEPER, None)
    actor.finalize(context(client, CLAIMS, "x", ListSink()))
    assert client.get(PODS, "p")["metadata"]["labels"]["pool.matrixorigin.io/phase"] == "Draining"
