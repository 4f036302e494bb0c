"""The list+watch's promises (mochaos.ctrl.listwatch), on scripted apiserver answers: every
change in the apiserver's order, resumed from the last version after the server's timeout,
the difference after a 410, reconnected after any API error, a handler's error not hidden."""

from __future__ import annotations

import threading

import pytest

from mochaos.ctrl.listwatch import ListWatch
from mochaos.ctrl.rest import PODS, Gone, Unreachable

from support.scripted_kube import ScriptedKube, Stream, listed, obj


def _run(lists, watches, *, known=None, last_rv=None, handle=None):
    stop = threading.Event()
    kube = ScriptedKube(lists=lists, watches=watches, stop=stop)
    seen = []
    retried = []
    lw = ListWatch(kube, PODS, "ns", handle=handle or seen.append, stop=stop,
                   on_retry=retried.append)  # fmt: skip
    if known is not None:
        lw.known.update(known)
        lw.last_rv = last_rv
    else:
        lw.initial_list()
    lw.run()
    return lw, kube, seen, retried


def _summary(seen):
    return [(e.type, e.last["metadata"]["name"], e.rv) for e in seen]


def test_the_first_list_is_handed_on_in_version_order_and_watched_from():
    _, kube, seen, _ = _run([listed(10, obj("c", 7), obj("a", 3), obj("b", 5))], [])
    assert _summary(seen) == [("ADDED", "a", 3), ("ADDED", "b", 5), ("ADDED", "c", 7)]
    assert kube.watched_from == ["10"]
    assert seen[0].obj["kind"] == "Pod" and seen[0].obj["apiVersion"] == "v1"


def test_a_watch_the_server_ends_resumes_from_the_last_version_seen():
    watch = [("MODIFIED", obj("a", 12)), ("BOOKMARK", {"metadata": {"resourceVersion": "15"}})]
    lw, kube, seen, _ = _run([listed(10, obj("a", 3))], [watch, [("ADDED", obj("b", 16))]])
    assert kube.watched_from == ["10", "15", "16"]
    assert _summary(seen) == [("ADDED", "a", 3), ("MODIFIED", "a", 12), ("ADDED", "b", 16)]
    assert seen[1].old["metadata"]["resourceVersion"] == "3"
    assert lw.reconnects == 0 and lw.relists == 0


def test_a_410_relists_and_hands_on_only_the_difference():
    known = {n: obj(n, rv) for n, rv in (("a", 3), ("b", 5), ("c", 6))}
    relist = listed(20, obj("a", 3), obj("d", 8), obj("b", 9))
    lw, kube, seen, retried = _run(
        [relist], [Gone(410, "Expired", "too old")], known=known, last_rv=6
    )
    assert _summary(seen) == [("DELETED", "c", 20), ("ADDED", "d", 8), ("MODIFIED", "b", 9)]
    deleted = seen[0]
    assert deleted.obj is None and deleted.old == known["c"]
    assert lw.relists == 1 and lw.reconnects == 0 and retried == []
    assert kube.watched_from == ["6", "20"]
    assert sorted(lw.known) == ["a", "b", "d"]


@pytest.mark.parametrize("where", ["at the request", "in the stream"])
def test_an_api_error_is_retried_from_the_last_version_seen(where):
    cut = Unreachable(0, "Unreachable", "connection refused")
    first = cut if where == "at the request" else Stream([("ADDED", obj("b", 12)), cut])
    lw, kube, seen, retried = _run([listed(10)], [first, [("ADDED", obj("c", 13))]])
    last = "10" if where == "at the request" else "12"
    assert kube.watched_from == ["10", last, "13"]
    assert lw.reconnects == 1 and retried == [cut] and lw.relists == 0
    assert [e.last["metadata"]["name"] for e in seen][-1] == "c"


def test_a_relist_that_fails_is_retried_not_fatal():
    refused = Unreachable(0, "Unreachable", "connection refused")
    lists = [listed(10), refused, listed(30, obj("x", 25))]
    lw, kube, seen, retried = _run(lists, [Gone(410, "Expired", ""), Gone(410, "Expired", "")])
    assert _summary(seen) == [("ADDED", "x", 25)]
    assert retried == [refused] and lw.relists == 1  # a relist is counted when it lists
    assert kube.watched_from == ["10", "10", "30"]


def test_an_error_of_the_handler_ends_the_loop_rather_than_skip_the_change():
    def handle(event):
        raise RuntimeError("handler broke")

    stop = threading.Event()
    kube = ScriptedKube(lists=[], watches=[[("ADDED", obj("a", 12))], []], stop=stop)
    lw = ListWatch(kube, PODS, "ns", handle=handle, stop=stop)
    with pytest.raises(RuntimeError, match="handler broke"):
        lw.run()
    assert lw.reconnects == 0


def test_stop_ends_a_read_blocked_in_another_thread():
    stop = threading.Event()
    blocked = Stream([("ADDED", obj("a", 12))], block=threading.Event())
    kube = ScriptedKube(lists=[], watches=[blocked], stop=stop)
    seen = []
    lw = ListWatch(kube, PODS, "ns", handle=seen.append, stop=stop)
    thread = threading.Thread(target=lw.run, daemon=True)
    thread.start()
    while not seen:
        thread.join(0.01)
    stop.set()
    lw.stop()
    thread.join(5)
    assert not thread.is_alive() and blocked.closed.is_set()
    assert kube.watched_from == ["0"]


def test_the_first_list_is_tried_again_until_it_answers_or_the_loop_is_stopped():
    stop = threading.Event()
    refused = Unreachable(0, "Unreachable", "connection refused")
    kube = ScriptedKube(lists=[refused, listed(10, obj("a", 3))], watches=[], stop=stop)
    seen, retried = [], []
    lw = ListWatch(kube, PODS, "ns", handle=seen.append, stop=stop, on_retry=retried.append)
    assert lw.sync() and retried == [refused] and _summary(seen) == [("ADDED", "a", 3)]
    stop.set()
    kube.lists.append(refused)
    assert not lw.sync() and retried == [refused]  # stopped: nothing is asked any more
