"""Building the local cluster's components: how many at once, and in which lanes.

The recipes are replaced by stand-ins that only note when they run, so these tests build
nothing; the real recipes are exercised by every cold build (bench/cluster_start.py).
"""

from __future__ import annotations

import threading
import time

import pytest

from mochaos.cluster import build
from mochaos.errors import UsageError


class Recipes:
    """Stand-in recipes: each takes ``seconds`` and notes how many ran at once."""

    def __init__(self, seconds: float = 0.3, fail: str | None = None) -> None:
        self.seconds = seconds
        self.fail = fail
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.order: list[str] = []

    def __call__(self, c: build.Component, runner) -> None:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.order.append(c.name)
        try:
            time.sleep(self.seconds)
            if c.name == self.fail:
                raise build.BuildError(f"building {c.name} failed: stand-in")
            for b in (*c.binaries, *c.files):
                c.path(b).write_text("stand-in")
        finally:
            with self.lock:
                self.running -= 1


@pytest.fixture
def recipes(monkeypatch, tmp_path):
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path))
    made = Recipes()
    monkeypatch.setattr(build, "_RECIPES", dict.fromkeys(build._RECIPES, made))
    return made


def run(todo=build.COMPONENTS) -> None:
    runner = build._Runner(log_path=build.cache_dir() / "build.log", progress=lambda _: None)
    build.cache_dir().mkdir(parents=True, exist_ok=True)
    build._build_all(list(todo), runner)


def test_kubernetes_has_a_lane_of_its_own():
    k8s, etcd, kwok, stages = build.COMPONENTS
    assert build._lanes(list(build.COMPONENTS), 2) == [[k8s], [etcd, kwok, stages]]
    assert build._lanes(list(build.COMPONENTS), 3) == [[k8s], [etcd, stages], [kwok]]
    assert build._lanes(list(build.COMPONENTS), 1) == [list(build.COMPONENTS)]
    assert build._lanes([etcd], 2) == [[etcd]]


def test_two_lanes_build_two_components_at_once(recipes, monkeypatch):
    monkeypatch.setenv("MOCHAOS_BUILD_LANES", "2")
    run()
    assert recipes.most == 2
    assert all(c.is_built() for c in build.COMPONENTS)


def test_by_default_one_component_is_built_after_the_other(recipes, monkeypatch):
    monkeypatch.delenv("MOCHAOS_BUILD_LANES", raising=False)
    run()
    assert recipes.most == 1
    assert recipes.order == [c.name for c in build.COMPONENTS]


def test_a_failure_is_raised_once_the_other_lane_is_done(recipes, monkeypatch):
    monkeypatch.setenv("MOCHAOS_BUILD_LANES", "2")
    recipes.fail = "kubernetes"
    with pytest.raises(build.BuildError, match="building kubernetes failed"):
        run()
    kubernetes, *others = build.COMPONENTS
    assert not kubernetes.is_built()
    assert all(c.is_built() for c in others)  # the other lane went on


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_a_bad_lane_count_is_a_usage_error(monkeypatch, value):
    monkeypatch.setenv("MOCHAOS_BUILD_LANES", value)
    with pytest.raises(UsageError, match="MOCHAOS_BUILD_LANES"):
        build.build_lanes()
