"""Errors wrap like go-errors; a patch carries only the change and the resourceVersion,
and the server's answer replaces the object — in-memory status included.
"""

from __future__ import annotations

from mochaos.ctrl.rest import CLAIMS, Conflict
from mochaos.model.runtime.context import Client, OperatorError, ReSync, find_cause, wrap


def test_wrapped_errors_keep_their_cause_and_message() -> None:
    resync = ReSync("pod is not in normal state, wait", 15)
    assert str(resync) == "reconcile error: pod is not in normal state, wait, retry after 15s"
    err = wrap(wrap(resync, "error claim CN"), "error claim idle CN")
    assert isinstance(err, OperatorError)
    assert str(err) == f"error claim idle CN: error claim CN: {resync}"
    assert find_cause(err, ReSync) is resync
    assert find_cause(err, Conflict) is None


class RecordingKube:
    def __init__(self, answer: dict) -> None:
        self.answer = answer
        self.patches: list[tuple[str, dict, bool]] = []

    def merge_patch(self, kind, namespace, name, patch, *, status=False):
        self.patches.append((name, patch, status))
        return self.answer


def test_patch_sends_the_change_with_the_resource_version_and_takes_the_answer() -> None:
    server = {
        "metadata": {"name": "x", "resourceVersion": "8"},
        "spec": {},
        "status": {"phase": "Bound"},
    }
    kube = RecordingKube(server)
    client = Client(kube, "ns", {})  # type: ignore[arg-type]
    obj = {
        "metadata": {"name": "x", "resourceVersion": "7"},
        "spec": {"podName": "p", "nodeName": "n"},
        "status": {"phase": "Lost"},
    }

    def clear() -> None:
        del obj["spec"]["podName"]
        del obj["spec"]["nodeName"]

    client.patch(CLAIMS, obj, clear)
    assert kube.patches == [
        (
            "x",
            {"spec": {"podName": None, "nodeName": None}, "metadata": {"resourceVersion": "7"}},
            False,
        )
    ]
    assert obj == server  # the in-memory Lost is gone: §1.5


def test_patch_without_change_sends_nothing() -> None:
    kube = RecordingKube({})
    obj = {"metadata": {"name": "x", "resourceVersion": "7"}, "spec": {}}
    Client(kube, "ns", {}).patch(CLAIMS, obj, lambda: None)  # type: ignore[arg-type]
    assert kube.patches == []
