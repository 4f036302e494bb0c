"""The interposer between a client and the real apiserver: what goes through it, a write it
holds until released, what it tells the journal, and its death named as infrastructure."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from mochaos.ctrl.rest import Kube, NotFound
from mochaos.errors import InfraError, UsageError
from mochaos.interpose.proxy import Interposer
from mochaos.interpose.rules import Field, Rule

from support.polling import wait_until

CONFIGMAPS = "/api/v1/namespaces/{ns}/configmaps"


@pytest.fixture
def interposer(cluster, tmp_path: Path):
    proxy = Interposer(tmp_path / "interposer", upstream_kubeconfig=Path(cluster.kubeconfig),
                       context=cluster.context).start()  # fmt: skip
    yield proxy
    proxy.stop()


def _client(kubeconfig: Path) -> Kube:
    return Kube.from_kubeconfig(str(kubeconfig), user_agent="mochaos/test-operator")


def _records(proxy: Interposer) -> list[dict]:
    return [json.loads(line) for line in proxy.journal.read_text().splitlines() if line.strip()]


def test_requests_go_through_and_are_journaled_local(interposer, cluster, namespace):
    through = _client(interposer.kubeconfig)
    path = CONFIGMAPS.format(ns=namespace)
    created = through.request("POST", path, body={"metadata": {"name": "c1"}, "data": {"a": "1"}})
    direct = _client(Path(cluster.kubeconfig))
    assert direct.request("GET", f"{path}/c1")["data"] == {"a": "1"}
    (record,) = [
        r for r in _records(interposer) if r["type"] == "request" and r["verb"] == "create"
    ]
    assert (record["resource"], record["name"], record["status"], record["action"]) == (
        "configmaps", "c1", 201, "pass",
    )  # fmt: skip
    assert record["object"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert record["user_agent"] == "mochaos/test-operator"


def test_a_held_write_lands_only_when_released_local(interposer, cluster, namespace):
    interposer.add(Rule("hold-c2", "hold", "ConfigMap", namespace, verbs=("create",),
                        fields=(Field("data.x", "eq", "2"),)))  # fmt: skip
    through, direct = _client(interposer.kubeconfig), _client(Path(cluster.kubeconfig))
    path = CONFIGMAPS.format(ns=namespace)
    done = threading.Event()
    writer = threading.Thread(
        target=lambda: (through.request("POST", path, body={"metadata": {"name": "c2"},
                                                            "data": {"x": "2"}}), done.set()),
        daemon=True,
    )  # fmt: skip
    writer.start()
    wait_until(lambda: interposer.rule("hold-c2")["held_now"] == 1, timeout=10,
               what="the write held")  # fmt: skip
    with pytest.raises(NotFound):
        direct.request("GET", f"{path}/c2")
    # A write the rule's fields do not match goes through meanwhile.
    through.request("POST", path, body={"metadata": {"name": "c3"}, "data": {"x": "3"}})
    assert not done.is_set()
    assert interposer.release("hold-c2")["state"] == "released"
    assert done.wait(10)
    assert interposer.rule("hold-c2")["released"] == 1
    assert direct.request("GET", f"{path}/c2")["data"] == {"x": "2"}
    held = [r for r in _records(interposer) if r.get("name") == "c2" and r["type"] == "request"]
    assert held[0]["action"] == "held" and held[0]["held_ms"] > 0


def test_a_rule_it_refuses_is_a_usage_error_and_one_that_cannot_match_never_leaves(
    interposer, namespace
):
    with pytest.raises(UsageError, match="no interposer rule can match kind 'Widget'"):
        Rule("w", "hold", "Widget", namespace)
    with pytest.raises(UsageError, match="no request of the operator is a frobnicate"):
        Rule("w", "hold", "Pod", namespace, verbs=("frobnicate",))
    interposer.add(Rule("dup", "freeze", "Pod", namespace))
    with pytest.raises(UsageError, match="refused POST /rules"):
        interposer.add(Rule("dup", "freeze", "Pod", namespace))


def test_release_all_leaves_nothing_held_and_a_dead_interposer_is_named(interposer, namespace):
    interposer.add(Rule("f", "freeze", "Pod", namespace))
    assert interposer.release_all() == ["f"]
    pid = interposer.pid
    assert pid is not None
    interposer._proc.kill()  # type: ignore[union-attr]
    interposer._proc.wait()  # type: ignore[union-attr]
    with pytest.raises(InfraError, match=r"the interposer is gone \(exit status -9\)"):
        interposer.check_alive()
    assert interposer.release_all() == []
