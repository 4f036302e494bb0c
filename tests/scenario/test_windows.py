"""The window proof: a gated fault is judged on the state just before its write, and an
operator fault (no write of its own) on a probe write's."""

from __future__ import annotations

from invariants.builders import HistoryBuilder

from mochaos.ctrl.objects import CLAIMED_BY_LABEL, labels_of
from mochaos.observe.history import ActionRecord
from mochaos.scenario.actions import Fired
from mochaos.scenario.nemesis import Nemesis
from mochaos.scenario.predicates import named


class _Actions:
    """Returns the records a test gives it, as the real actions return theirs."""

    def __init__(self, records: dict[str, ActionRecord]) -> None:
        self.records = records
        self.probes = 0

    def remove_label(self, pod, *, key, trigger=None):
        return self.records["remove_label"]

    def pause_operator(self, seconds, *, trigger=None):
        return self.records["pause_operator"]

    def probe(self, *, trigger=None):
        self.probes += 1
        return self.records["window_probe"]


class _Recorder:
    def __init__(self) -> None:
        self.resolved: dict[int, bool] = {}

    def resolve_action(self, seq: int, *, in_window: bool) -> None:
        self.resolved[seq] = in_window


LABELLED = named(
    "pod b is labelled",
    lambda s: CLAIMED_BY_LABEL in labels_of(s.get("Pod", "b") or {}),
)


def _record(seq: int, action: str, write_rv: int | None) -> ActionRecord:
    return ActionRecord(seq, 0.0, action, "Pod", "b", write_rv=write_rv)


def test_a_fault_that_ends_its_own_trigger_state_landed_in_its_window():
    h = HistoryBuilder()
    h.pod("b", phase="Bound", claimed_by="x")  # rv 101
    removed = h.pod("b", claimed_by=None)  # rv 102: our removal of the label itself
    recorder = _Recorder()
    nemesis = Nemesis(_Actions({"remove_label": _record(5, "remove_label", removed.rv)}), recorder)
    nemesis.remove_label("b", key=CLAIMED_BY_LABEL, trigger=Fired("t", None, 101, LABELLED))
    assert nemesis.verify_windows(h.build()) == []
    assert recorder.resolved == {5: True}


def test_a_fault_after_its_state_ended_missed_its_window():
    h = HistoryBuilder()
    h.pod("b", phase="Bound", claimed_by="x")  # rv 101
    h.pod("b", claimed_by=None)  # rv 102: the operator's, before our write
    recorder = _Recorder()
    nemesis = Nemesis(_Actions({"remove_label": _record(5, "remove_label", 103)}), recorder)
    nemesis.remove_label("b", key=CLAIMED_BY_LABEL, trigger=Fired("t", None, 101, LABELLED))
    (missed,) = nemesis.verify_windows(h.build())
    assert "remove_label Pod/b landed at rv 103" in missed
    assert recorder.resolved == {5: False}


def test_an_operator_fault_is_dated_by_its_probe_and_both_records_are_resolved():
    h = HistoryBuilder()
    h.pod("b", phase="Bound", claimed_by="x")  # rv 101
    h.pod("b", claimed_by=None)  # rv 102
    records = {
        "pause_operator": _record(7, "pause_operator", None),
        "window_probe": _record(8, "window_probe", 103),
    }
    actions, recorder = _Actions(records), _Recorder()
    nemesis = Nemesis(actions, recorder)
    nemesis.pause_operator(1.0, trigger=Fired("t", None, 101, LABELLED))
    assert actions.probes == 1
    assert len(nemesis.verify_windows(h.build())) == 1
    assert recorder.resolved == {8: False, 7: False}
    # Ungated (no predicate: a log-line trigger), no probe is written.
    Nemesis(actions, recorder).pause_operator(1.0, trigger=Fired("logged", None, None))
    assert actions.probes == 1
