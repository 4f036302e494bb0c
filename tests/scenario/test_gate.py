"""The gate: every write given a trigger is proven, at the verdict, to have landed while the
trigger's predicate still held — on the state just before its write, or before the probe
write that dates an operator fault; the agent's gated request goes through it like any
fault; a trigger that carries nothing to check is refused before anything is sent."""

from __future__ import annotations

import random

import pytest

from mochaos.ctrl.listwatch import Event
from mochaos.ctrl.objects import CLAIMED_BY_LABEL, PHASE_LABEL, labels_of
from mochaos.errors import UsageError
from mochaos.faults import delete_pod, kill_operator, remove_label, restart_operator
from mochaos.observe.history import ActionRecord, Change, LogRecord, State
from mochaos.scenario import named
from mochaos.scenario._agent import UnitAgent
from mochaos.scenario._gate import Fired, Gate

from support.builders import HistoryBuilder
from support.writes_standin import at_rv, scripted_writes

LABELLED = named(
    "pod b is labelled",
    lambda s: CLAIMED_BY_LABEL in labels_of(s.get("Pod", "b") or {}),
)


def fired(predicate=LABELLED) -> Fired:
    return Fired("pod b is labelled", None, 101, predicate)


def test_a_fault_that_ends_its_own_trigger_state_landed_in_its_window():
    h = HistoryBuilder()
    h.pod("b", phase="Bound", claimed_by="x")  # rv 101
    removed = h.pod("b", claimed_by=None)  # rv 102: our removal of the label itself
    writes, recorder, _ = scripted_writes(at_rv(removed.rv))
    gate = writes._gate
    record = writes.inject(remove_label("b"), trigger=fired(), state=State())
    assert gate.verify(h.build()) == []
    assert recorder.history()[record.seq].in_window is True


def test_a_fault_after_its_state_ended_missed_its_window():
    h = HistoryBuilder()
    h.pod("b", phase="Bound", claimed_by="x")  # rv 101
    h.pod("b", claimed_by=None)  # rv 102: the operator's, before our write
    writes, recorder, _ = scripted_writes(at_rv(103))
    record = writes.inject(remove_label("b"), trigger=fired(), state=State())
    (missed,) = writes._gate.verify(h.build())
    assert missed == (
        "remove_label Pod/b landed at rv 103, after its trigger 'pod b is labelled' stopped holding"
    )
    assert recorder.history()[record.seq].in_window is False


class Operator:
    """A running operator that notes each call and how long the history was then."""

    def __init__(self, recorder) -> None:
        self.recorder = recorder
        self.calls: list[tuple[str, int]] = []

    def _note(self, what: str) -> None:
        self.calls.append((what, len(self.recorder.history())))

    def restart(self) -> None:
        self._note("restart")

    def kill(self) -> None:
        self._note("kill")

    def pause(self, seconds: float) -> None:
        self._note("pause")


def _operator_fault(kind, history_rv: int):
    writes, recorder, kube = scripted_writes(at_rv(history_rv))
    operator = Operator(recorder)
    writes._operator = operator
    record = writes.inject(kind(), trigger=fired(), state=State())
    return writes, recorder, kube, operator, record


def test_a_restart_is_dated_by_a_probe_written_just_before_it():
    h = HistoryBuilder()
    h.pod("b", phase="Bound", claimed_by="x")  # rv 101
    writes, recorder, kube, operator, _ = _operator_fault(restart_operator, 102)
    (probe, fault) = recorder.history()
    assert (probe.action, fault.action, fault.fault) == ("window_probe", "restart_operator",
                                                         "restart")  # fmt: skip
    assert operator.calls == [("restart", 1)]  # after the probe was recorded
    assert kube.sent[0][0:2] == ("PATCH", "/api/v1/namespaces/ns")
    assert writes._gate.verify(h.build()) == []
    assert [e.in_window for e in recorder.history()] == [True, True]


def test_a_kill_is_dated_by_a_probe_written_just_after_it_and_both_records_are_resolved():
    h = HistoryBuilder()
    h.pod("b", phase="Bound", claimed_by="x")  # rv 101
    h.pod("b", claimed_by=None)  # rv 102: the state ended before the probe
    writes, recorder, _, operator, _ = _operator_fault(kill_operator, 103)
    (fault, probe) = recorder.history()
    assert (fault.action, probe.action) == ("kill_operator", "window_probe")
    assert operator.calls == [("kill", 0)]
    assert len(writes._gate.verify(h.build())) == 1
    assert [e.in_window for e in recorder.history()] == [False, False]


def test_a_log_line_trigger_is_an_event_the_write_came_after_no_probe():
    writes, recorder, kube = scripted_writes()
    writes._operator = Operator(recorder)
    line = LogRecord(3, 0.0, "info", "finalize CNClaim", "ns", "x")
    writes.inject(restart_operator(), trigger=Fired("1× 'finalize CNClaim'", line, None),
                  state=State())  # fmt: skip
    assert kube.sent == []  # no probe: nothing to date
    (record,) = recorder.history()
    assert (record.trigger, record.in_window) == ("1× 'finalize CNClaim'", True)


@pytest.mark.parametrize(
    ("trigger", "why"),
    [
        (LABELLED, "trigger= takes what sc.when"),
        (Fired("a wait", None, 101), "carries no predicate"),
    ],
)
def test_a_trigger_that_cannot_be_checked_is_refused_before_anything_is_sent(trigger, why):
    writes, recorder, kube = scripted_writes()
    with pytest.raises(UsageError, match=why):
        writes.inject(delete_pod("b"), trigger=trigger, state=State())
    assert kube.sent == [] and list(recorder.history()) == []


def test_no_gated_write_after_the_verdict():
    writes, _, _ = scripted_writes()
    writes._gate.verify(HistoryBuilder().build())
    with pytest.raises(UsageError, match="a gated write after the verdict"):
        writes.inject(delete_pod("b"), trigger=fired(), state=State())


def test_a_gated_write_without_a_version_cannot_be_dated_and_misses():
    writes, _, _ = scripted_writes({"kind": "Status", "status": "Success"})
    writes.inject(delete_pod("b"), trigger=fired(), state=State())
    (missed,) = writes._gate.verify(HistoryBuilder().build())
    assert missed == "delete_pod Pod/b: its write returned no resourceVersion to date it by"


def test_the_agents_gated_request_goes_through_the_gate():
    h = HistoryBuilder()
    h.claim("x", phase="Bound", pod="a")  # rv 101
    h.pod("b", phase="Idle")  # rv 102
    h.pod("b", phase="Bound", claimed_by="z")  # rv 103: Z took b before the request landed
    writes, recorder, _ = scripted_writes(at_rv(104))
    for change in h.build().changes():
        recorder._on_event(change.kind, _event(change))
    agent = UnitAgent(writes, recorder, rng=random.Random(1))
    idle = named(
        "pod b is Idle", lambda s: labels_of(s.get("Pod", "b") or {})[PHASE_LABEL] == "Idle"
    )
    migration = agent.request_migration("x", target="b", trigger=Fired("b Idle", None, 102, idle))
    agent.stop()
    (missed,) = writes._gate.verify(h.build())
    assert missed.startswith("request_migration CNClaim/x landed at rv 104, after its trigger")
    first: ActionRecord = recorder.history()[migration.first.seq]
    assert (first.action, first.in_window) == ("request_migration", False)


def _event(change: Change) -> Event:
    return Event(type=change.event, obj=change.obj, old=None, rv=change.rv)


def test_one_gate_serves_every_write_path_of_a_scenario():
    writes, _, _ = scripted_writes(at_rv(5), at_rv(6))
    gate = writes._gate
    assert isinstance(gate, Gate)
    other, _, _ = scripted_writes(at_rv(7), gate=gate)
    assert other._gate is gate
