"""Obtaining components: how many are built at once, in which lanes, and that concurrent
callers build once.

The recipes are replaced by stand-ins that only note when they run, so these tests build
nothing; the real recipes are exercised by every cold build (bench/cluster/cluster_start.py).
"""

from __future__ import annotations

import threading
import time

import pytest

from mochaos.binaries import obtain
from mochaos.binaries.component import Component
from mochaos.binaries.control_plane import COMPONENTS
from mochaos.binaries.go import Runner
from mochaos.errors import BuildError, UsageError
from mochaos.paths import cache_dir


class Recipes:
    """Stand-in recipes: each takes ``seconds`` and notes how many ran at once."""

    def __init__(self, seconds: float = 0.3, fail: str | None = None) -> None:
        self.seconds = seconds
        self.fail = fail
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.order: list[str] = []

    def __call__(self, c: Component, runner: Runner) -> None:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.order.append(c.name)
        try:
            time.sleep(self.seconds)
            if c.name == self.fail:
                raise BuildError(f"building {c.name} failed: stand-in")
            for b in (*c.binaries, *c.files):
                c.path(b).write_text("stand-in")
        finally:
            with self.lock:
                self.running -= 1


@pytest.fixture
def recipes(monkeypatch, tmp_path):
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path))
    return Recipes()


def run(recipes: Recipes, todo=COMPONENTS) -> None:
    runner = Runner(log_path=cache_dir() / "build.log", progress=lambda _: None)
    cache_dir().mkdir(parents=True, exist_ok=True)
    obtain.build_all(list(todo), runner, dict.fromkeys((c.name for c in todo), recipes))


def test_kubernetes_has_a_lane_of_its_own():
    k8s, etcd, kwok, stages = COMPONENTS
    assert obtain.lanes_of(list(COMPONENTS), 2) == [[k8s], [etcd, kwok, stages]]
    assert obtain.lanes_of(list(COMPONENTS), 3) == [[k8s], [etcd, stages], [kwok]]
    assert obtain.lanes_of(list(COMPONENTS), 1) == [list(COMPONENTS)]
    assert obtain.lanes_of([etcd], 2) == [[etcd]]


def test_two_lanes_build_two_components_at_once(recipes, monkeypatch):
    monkeypatch.setenv("MOCHAOS_BUILD_LANES", "2")
    run(recipes)
    assert recipes.most == 2
    assert all(c.is_built() for c in COMPONENTS)


def test_by_default_one_component_is_built_after_the_other(recipes, monkeypatch):
    monkeypatch.delenv("MOCHAOS_BUILD_LANES", raising=False)
    run(recipes)
    assert recipes.most == 1
    assert recipes.order == [c.name for c in COMPONENTS]


def test_a_failure_is_raised_once_the_other_lane_is_done(recipes, monkeypatch):
    monkeypatch.setenv("MOCHAOS_BUILD_LANES", "2")
    recipes.fail = "kubernetes"
    with pytest.raises(BuildError, match="building kubernetes failed"):
        run(recipes)
    kubernetes, *others = COMPONENTS
    assert not kubernetes.is_built()
    assert all(c.is_built() for c in others)  # the other lane went on


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_lane_count_is_a_usage_error(monkeypatch, value):
    monkeypatch.setenv("MOCHAOS_BUILD_LANES", value)
    with pytest.raises(UsageError, match="MOCHAOS_BUILD_LANES"):
        obtain.build_lanes()


def test_callers_at_once_build_once_and_find_it_cached(recipes, monkeypatch):
    """Two callers of one component (test workers and the provider) at the same moment: the
    file lock lets one build; the other waits and finds the stamp."""
    c = Component("stand-in", "v0.0.1", ("stand-in",), "stand-in-v1")
    lines: list[str] = []
    callers = [
        threading.Thread(
            target=obtain.obtain, args=([c],), kwargs={"recipes": {c.name: recipes},
                                                      "progress": lines.append},
        )
        for _ in range(2)
    ]  # fmt: skip
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert recipes.order == ["stand-in"]
    assert c.is_built()
    assert any(line.startswith("mo-chaos: binaries cached in") for line in lines)


def test_a_cached_component_is_rebuilt_only_when_forced(recipes):
    c = Component("stand-in", "v0.0.1", ("stand-in",), "stand-in-v1")
    for _ in range(2):
        obtain.obtain([c], recipes={c.name: recipes}, progress=lambda _: None)
    assert recipes.order == ["stand-in"]
    obtain.obtain([c], recipes={c.name: recipes}, progress=lambda _: None, force=True)
    assert recipes.order == ["stand-in", "stand-in"]


def test_another_recipe_revision_makes_the_cache_stale(recipes):
    old = Component("stand-in", "v0.0.1", ("stand-in",), "stand-in-v1")
    obtain.obtain([old], recipes={old.name: recipes}, progress=lambda _: None)
    new = Component("stand-in", "v0.0.1", ("stand-in",), "stand-in-v2")
    assert old.is_built() and not new.is_built()
