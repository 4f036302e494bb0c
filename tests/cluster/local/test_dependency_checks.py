"""The local cluster's dependency checks see a double the supervisor restarted between two
probes: healthy at both looks, but under another pid — a crash and a restart the operator's
calls through it may have met. Before, such a restart left no outage in the history, and a
violation it caused stood as the operator's verdict."""

from __future__ import annotations

from mochaos.cluster import environment
from mochaos.cluster.environment import Environment
from mochaos.cluster.local import doubles_host
from mochaos.cluster.local.local_provider import LocalProvider


def _probes(monkeypatch, tmp_path, pids: list[int | None]) -> list[str | None]:
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path))
    (double,) = environment.parts(Environment(matrixone=True))
    looks = iter(pids)
    monkeypatch.setattr(doubles_host, "running", lambda d, s: next(looks))
    monkeypatch.setattr(doubles_host, "health", lambda d, ctx: None)
    check = LocalProvider(name="mc-checks", doubles=[double]).dependency_checks()[double.name]
    return [check() for _ in pids]


def test_a_restart_between_two_probes_is_an_outage(monkeypatch, tmp_path):
    assert _probes(monkeypatch, tmp_path, [10, 10, 11, 11]) == [
        None, None, "restarted (pid 10 -> 11)", None,
    ]  # fmt: skip


def test_a_restart_seen_while_down_is_one_outage(monkeypatch, tmp_path):
    # The probe saw it gone, then back: that outage ends when it is back and healthy.
    assert _probes(monkeypatch, tmp_path, [10, None, 11, 11]) == [None, "not running", None, None]
