"""The recorder's journal: new entries once, and an action record again when it is completed."""

from __future__ import annotations

from mochaos.observe.history import ActionRecord, Marker
from mochaos.observe.recorder import Recorder


def _recorder() -> Recorder:
    clock = iter(range(100))
    return Recorder(None, namespace="ns", kinds=(), clock=lambda: float(next(clock)))  # type: ignore[arg-type]


def test_journal_gives_new_entries_then_completed_records_in_order():
    rec = _recorder()
    intent = rec.record_action(action="scale_claimset", kind="CNClaimSet", name="s1",
                               params={"replicas": 1}, intent=True)  # fmt: skip
    items, cursor = rec.journal()
    assert items == [intent] and cursor == 1
    assert intent.write_rv is None
    rec.mark("scenario")
    done = rec.complete_action(intent.seq, write_rv=42)
    assert (done.seq, done.write_rv, done.error, done.intent) == (intent.seq, 42, None, True)
    items, cursor = rec.journal(cursor)
    assert [type(i) for i in items] == [Marker, ActionRecord] and items[1] == done
    assert cursor == 3
    assert rec.journal(cursor) == ([], 3)
    # The history holds the completed record in the intent's place.
    assert rec.history()[intent.seq] == done and len(rec.history()) == 2


def test_a_failed_write_and_a_window_verdict_are_journalled_too():
    rec = _recorder()
    intent = rec.record_action(action="delete_claim", kind="CNClaim", name="x", intent=True)
    failed = rec.complete_action(intent.seq, error="404 Not Found")
    rec.resolve_action(intent.seq, in_window=False)
    items, _ = rec.journal(1)
    assert items[0] == failed and failed.error == "404 Not Found"
    assert items[1].in_window is False and items[1].error == "404 Not Found"
