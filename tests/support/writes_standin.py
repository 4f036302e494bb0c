"""A scripted apiserver for the write path's tests: each write answers with the next item of
its script (an object, or an ApiError to raise); the namespace read of the scope check
answers with this run's label. Every request is kept, with the history as it was when the
request was sent (so a test sees that the intent came first)."""

from __future__ import annotations

from typing import Any

from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.observe.recorder import Recorder
from mochaos.scenario._gate import Gate
from mochaos.scenario._writes import Writes

RUN_ID = "r"
NAMESPACE = "ns"


class ScriptedKube:
    """What the write path asks of :class:`mochaos.ctrl.rest.Kube`: ``request``."""

    def __init__(self, recorder: Recorder, *answers: Any) -> None:
        self.recorder = recorder
        self.answers = list(answers)
        self.sent: list[tuple[str, str, Any]] = []
        self.seen: list[list[Any]] = []

    def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> dict[str, Any]:
        if method == "GET" and path == f"/api/v1/namespaces/{NAMESPACE}":
            return {"metadata": {"name": NAMESPACE, "labels": {RUN_ID_LABEL: RUN_ID}}}
        self.sent.append((method, path, body))
        self.seen.append(list(self.recorder.history()))
        answer = self.answers.pop(0) if self.answers else {"metadata": {"resourceVersion": "1"}}
        if isinstance(answer, BaseException):
            raise answer
        return answer


def at_rv(rv: int) -> dict[str, Any]:
    """A write's answer: the object at resourceVersion ``rv``."""
    return {"metadata": {"resourceVersion": str(rv)}}


def scripted_writes(
    *answers: Any, operator: Any = None, gate: Gate | None = None
) -> tuple[Writes, Recorder, ScriptedKube]:
    """A write path on a recorder that records nothing but our own writes."""
    recorder = Recorder(None, namespace=NAMESPACE, kinds=())  # type: ignore[arg-type]
    kube = ScriptedKube(recorder, *answers)
    writes = Writes(kube, namespace=NAMESPACE, run_id=RUN_ID, recorder=recorder,  # type: ignore[arg-type]
                    gate=gate or Gate(recorder), operator=operator, component="chaos")  # fmt: skip
    return writes, recorder, kube
