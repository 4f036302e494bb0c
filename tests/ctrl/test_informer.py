"""The informer's promises (mochaos.ctrl.informer): a cache that hands out copies, handlers
called with (event, old, new) as client-go's, a handler's error reported and survived, and a
first list tried again until it answers."""

from __future__ import annotations

import threading

from mochaos.ctrl.informer import Informer
from mochaos.ctrl.rest import PODS, Gone, Unreachable

from support.scripted_kube import ScriptedKube, listed, obj


def _informer(lists, watches, *, handler=None):
    stop = threading.Event()
    kube = ScriptedKube(lists=lists, watches=watches, stop=stop)
    errors: list[str] = []
    calls: list[tuple] = []
    informer = Informer(kube, PODS, "ns", stop=stop, on_error=errors.append)

    def record(event, old, new):
        calls.append((event, _name_rv(old), _name_rv(new)))

    informer.add_handler(handler or record)
    return informer, calls, errors


def _name_rv(o):
    return None if o is None else (o["metadata"]["name"], o["metadata"]["resourceVersion"])


def test_handlers_see_old_and_new_as_client_go_hands_them():
    watch = [
        ("MODIFIED", obj("a", 11)),
        ("ADDED", obj("b", 12)),
        ("DELETED", obj("a", 13)),
    ]
    informer, calls, errors = _informer([listed(10, obj("a", 3)), listed(20, obj("c", 19))],
                                        [watch, Gone(410, "Expired", "")])  # fmt: skip
    informer.run()
    assert calls == [
        ("ADDED", None, ("a", "3")),
        ("MODIFIED", ("a", "3"), ("a", "11")),
        ("ADDED", None, ("b", "12")),
        ("DELETED", ("a", "11"), None),  # the cached state, not the tombstone
        ("DELETED", ("b", "12"), None),  # gone when relisted: its last known state
        ("ADDED", None, ("c", "19")),
    ]
    assert informer.synced.is_set() and errors == []


def test_a_watch_event_for_an_object_the_cache_lacks_is_added():
    informer, calls, _ = _informer([listed(10)], [[("MODIFIED", obj("a", 11))]])
    informer.run()
    assert calls == [("ADDED", None, ("a", "11"))]


def test_the_cache_hands_out_copies_filtered_in_name_order():
    items = (obj("b", 2, app="cn"), obj("a", 3, app="cn"), obj("c", 4, app="other"))
    informer, _, _ = _informer([listed(10, *items)], [])
    informer.run()
    got = informer.list(labels={"app": "cn"})
    assert [o["metadata"]["name"] for o in got] == ["a", "b"]
    got[0]["metadata"]["labels"]["app"] = "changed"
    informer.get("a")["metadata"]["name"] = "changed"
    assert informer.get("a")["metadata"] == obj("a", 3, app="cn")["metadata"]
    assert [
        o["metadata"]["name"] for o in informer.list(where=lambda o: o["metadata"]["name"] > "b")
    ] == ["c"]
    assert informer.get("zz") is None


def test_a_handler_error_is_reported_and_the_next_change_still_delivered():
    seen = []

    def handler(event, old, new):
        seen.append(new["metadata"]["name"])
        if new["metadata"]["name"] == "a":
            raise ValueError("bad a")

    informer, _, errors = _informer(
        [listed(10)], [[("ADDED", obj("a", 11)), ("ADDED", obj("b", 12))]], handler=handler
    )
    informer.run()
    assert seen == ["a", "b"]
    assert errors == ["handler of pods: ValueError('bad a')"]


def test_the_first_list_is_tried_again_until_it_answers():
    refused = Unreachable(0, "Unreachable", "connection refused")
    informer, calls, errors = _informer([refused, refused, listed(10, obj("a", 3))], [])
    informer.run()
    assert calls == [("ADDED", None, ("a", "3"))]
    assert errors == ["list+watch pods: connection refused"] * 2 and informer.synced.is_set()
