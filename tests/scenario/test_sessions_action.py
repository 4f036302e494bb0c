"""Sessions on a CN go through the operator's environment and are recorded as the agent's."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from mochaos.config import CheckOptions
from mochaos.ctrl.objects import SESSIONS_ANNOTATION
from mochaos.ctrl.rest import Kube
from mochaos.observe.recorder import Recorder
from mochaos.operator.target import Waits
from mochaos.scenario._gate import Gate
from mochaos.scenario._topology import Topology
from mochaos.scenario._triggers import RecorderTriggers
from mochaos.scenario._writes import AGENT, Writes


class EnvironmentWithSessions:
    """A running operator whose environment holds sessions (as every target's does)."""

    def __init__(self, rv: int | None) -> None:
        self.held: list[tuple[str, int]] = []
        self.sessions = self
        self.waits = Waits()
        self.pool_spec = None
        self._rv = rv

    def hold(self, pod: str, n: int) -> int | None:
        self.held.append((pod, n))
        return self._rv


def _workload(kube: Any, namespace: str, run_id: str, env: EnvironmentWithSessions) -> Topology:
    recorder = Recorder(kube, namespace=namespace)
    writes = Writes(Kube(kube.configuration, user_agent=AGENT), namespace=namespace,
                    run_id=run_id, recorder=recorder, gate=Gate(recorder), operator=None,
                    component="agent")  # fmt: skip
    return Topology(writes, recorder=recorder, triggers=RecorderTriggers(recorder),
                    operator=env, run_id=run_id, options=CheckOptions())  # type: ignore[arg-type]  # fmt: skip


def test_sessions_go_to_the_environment_and_are_recorded_local(kube, namespace, mochaos):
    env = EnvironmentWithSessions(rv=None)
    record = _workload(kube, namespace, mochaos.run_id, env).set_sessions("pool-cn-0", 1)
    assert env.held == [("pool-cn-0", 1)]
    assert (record.action, record.kind, record.name, record.params, record.component) == (
        "set_sessions", "Pod", "pool-cn-0", {"sessions": 1}, "agent",
    )  # fmt: skip
    # The sessions themselves are no Kubernetes write: the operator reads them from the CN.
    assert record.write_rv is None


def test_a_write_the_environment_made_is_the_records_proof_local(kube, namespace, mochaos):
    env = EnvironmentWithSessions(rv=4242)
    record = _workload(kube, namespace, mochaos.run_id, env).set_sessions("pool-cn-0", 2)
    assert record.write_rv == 4242


def test_the_pod_is_annotated_so_the_store_rereads_its_sessions_local(kube, namespace, mochaos):
    """A new non-stats annotation passes the operator's cnstore watch: the deletion cost
    follows at once instead of at the next 30 s resync."""
    core = client.CoreV1Api(kube)
    body = {
        "metadata": {"name": "cn-0", "labels": {"mochaos.io/run-id": mochaos.run_id}},
        "spec": {"containers": [{"name": "main", "image": "none"}]},
    }
    core.create_namespaced_pod(namespace, body)
    env = EnvironmentWithSessions(rv=None)
    _workload(kube, namespace, mochaos.run_id, env).set_sessions("cn-0", 3)
    pod = core.read_namespaced_pod("cn-0", namespace)
    assert pod.metadata.annotations[SESSIONS_ANNOTATION] == "3"
