"""Sessions on a CN pod go through the operator's environment when it has CNs (kind)."""

from __future__ import annotations

from typing import Any

from mochaos.observe.recorder import Recorder
from mochaos.scenario.actions import Actions


class EnvironmentWithSessions:
    """A running operator whose environment holds sessions (as the kind target's does)."""

    def __init__(self) -> None:
        self.held: list[tuple[str, int]] = []
        self.sessions = self

    def hold(self, pod: str, n: int) -> None:
        self.held.append((pod, n))


def test_hold_sessions_asks_the_environment_and_records_the_action_local(
    kube: Any, namespace: str, mochaos: Any
) -> None:
    env = EnvironmentWithSessions()
    recorder = Recorder(kube, namespace=namespace)
    actions = Actions(kube, namespace=namespace, run_id=mochaos.run_id, recorder=recorder,
                      operator=env)  # type: ignore[arg-type]  # fmt: skip
    record = actions.hold_sessions("pool-cn-0", 1)
    assert env.held == [("pool-cn-0", 1)]
    assert (record.action, record.kind, record.name, record.params) == (
        "hold_sessions", "Pod", "pool-cn-0", {"sessions": 1},
    )  # fmt: skip
    # No pod annotation is written: the operator derives the score from the CN itself.
    assert record.write_rv is None
