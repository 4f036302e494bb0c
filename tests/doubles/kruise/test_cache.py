"""The double's cache keeps the newest copy it has seen, from the watch or from its own
writes, never resurrects a deleted object, and relists after 410 Gone."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from mochaos.doubles.kruise.api import PODS, Gone, Obj
from mochaos.doubles.kruise.cache import Cache


def obj(name: str, rv: int, uid: str = "", **extra) -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": uid or f"u-{name}",
            "resourceVersion": str(rv),
        },
        **extra,
    }


class ScriptedApi:
    """LIST answers and watch streams, one per call, in order; stops the cache at the end."""

    def __init__(
        self, lists: list[Obj], watches: list[list[Obj] | Exception], stop: threading.Event
    ):
        self.lists = lists
        self.watches = watches
        self.stop = stop

    def list(self, res, namespace=None) -> Obj:
        return self.lists.pop(0)

    def watch(self, res, *, resource_version, timeout, stop) -> Iterator[Obj]:
        if not self.watches:
            self.stop.set()
            return iter(())
        step = self.watches.pop(0)
        if isinstance(step, Exception):
            raise step
        return iter(step)


def listing(*items: Obj, rv: int = 10) -> Obj:
    return {"metadata": {"resourceVersion": str(rv)}, "items": list(items)}


def run(cache: Cache, stop: threading.Event) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    cache.add_handler(lambda e, old, new: seen.append((e, (new or old)["metadata"]["name"])))
    cache.run(stop)
    return seen


def test_write_through_wins_over_an_older_watch_event():
    stop = threading.Event()
    events = [
        {"type": "MODIFIED", "object": obj("p", 6)},
        {"type": "MODIFIED", "object": obj("q", 4, note="stale")},
    ]
    api = ScriptedApi([listing(obj("p", 5), obj("q", 3))], [events], stop)
    cache = Cache(api, PODS, on_error=lambda m: None)  # type: ignore[arg-type]
    cache.add_handler(
        lambda e, old, new: (
            new and new["metadata"]["name"] == "p" and cache.store(obj("q", 9, note="written"))
        )
    )
    seen = run(cache, stop)
    assert cache.get("ns", "p")["metadata"]["resourceVersion"] == "6"
    assert cache.get("ns", "q")["note"] == "written", "the older watch event must not win"
    assert ("MODIFIED", "p") in seen and ("MODIFIED", "q") not in seen


def test_a_deleted_object_is_not_resurrected_by_a_late_write_through():
    stop = threading.Event()
    deleted = {"type": "DELETED", "object": obj("p", 6)}
    api = ScriptedApi([listing(obj("p", 5))], [[deleted]], stop)
    cache = Cache(api, PODS, on_error=lambda m: None)  # type: ignore[arg-type]
    run(cache, stop)
    assert cache.get("ns", "p") is None
    cache.store(obj("p", 7))  # e.g. our own DELETE's answer arriving after the watch event
    assert cache.get("ns", "p") is None
    cache.store(obj("p", 8, uid="another"))  # a new pod of the same name is welcome
    assert cache.get("ns", "p") is not None


def test_gone_relists_and_reports_what_vanished():
    stop = threading.Event()
    api = ScriptedApi(
        [listing(obj("a", 1), obj("b", 2)), listing(obj("a", 3), rv=20)],
        [Gone(410, "Expired", "too old")],
        stop,
    )
    errors: list[str] = []
    cache = Cache(api, PODS, on_error=errors.append)  # type: ignore[arg-type]
    seen = run(cache, stop)
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    assert errors == [], "a 410 is routine, not an error"
    assert [o["metadata"]["name"] for o in cache.list()] == ["a"]
