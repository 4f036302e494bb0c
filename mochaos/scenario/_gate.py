"""The gate: every gated write of a scenario, proven to have landed while its trigger held.

A trigger (:class:`Fired`, what ``sc.when`` returns) carries the state predicate it waited
for. Every write given a trigger — a fault, the platform agent's request, any write of the
one write path (:mod:`._writes`) — passes :meth:`Gate.admit` before it is sent (a trigger
that is not one is a usage error) and :meth:`Gate.landed` after: its proof (its own write,
or the probe write that dates an operator fault) is kept. At the verdict :meth:`Gate.verify`
re-evaluates each predicate on the state just before the proof's resourceVersion (a fault
that itself ends the state it aimed at still landed in its window). A fault that landed after
its trigger stopped holding proves nothing: the scenario is then inconclusive.

A trigger on a log line (``sc.when_logged``) is an event: the write lands after it, which
its order in the history proves; given ``holds=`` it is also a state trigger.

A write the apiserver refused is kept here too (:meth:`Gate.refused`): the scenario is
inconclusive even when the test caught the exception it raised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mochaos.errors import UsageError
from mochaos.observe.history import ActionRecord, Entry, History, LogRecord, State
from mochaos.observe.recorder import Recorder

Predicate = Callable[[State], bool]


@dataclass(frozen=True)
class Fired:
    """Evidence that a trigger held: its name, the observation that made it true, and the
    state predicate to re-check at the version of the gated write (None only for a log-line
    trigger, an event)."""

    name: str
    entry: Entry | None
    rv: int | None
    predicate: Predicate | None = field(default=None, compare=False)


@dataclass
class _Proof:
    record: ActionRecord
    """The write whose version is checked (the fault's own, or its probe)."""
    trigger: Fired
    also: int | None = None
    """The record of the operator fault a probe stands for (resolved with it)."""


class Gate:
    """The proofs of one scenario's gated writes, shared by all its write paths."""

    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder
        self._proofs: list[_Proof] = []
        self._refused: list[str] = []
        self._rules: list[tuple[ActionRecord, str, Any]] = []
        self._lock = threading.Lock()
        self.closed = False
        """Set by the verdict: a write gated after it could never be verified."""

    def admit(self, trigger: object) -> Fired | None:
        """The trigger a write may be gated by: None, or a :class:`Fired` that carries a state
        predicate or is a log-line event. Anything else is a usage error, raised before the
        write is sent."""
        if trigger is None:
            return None
        if self.closed:
            raise UsageError(
                "a gated write after the verdict", hint="inject faults before sc.verdict()"
            )
        if not isinstance(trigger, Fired):
            raise UsageError(
                f"trigger= takes what sc.when(...) returned, not {type(trigger).__name__}",
                hint="wait with sc.when(predicate, timeout=…) and pass its result",
            )
        if trigger.predicate is None and not isinstance(trigger.entry, LogRecord):
            raise UsageError(
                f"trigger {trigger.name!r} carries no predicate: its window cannot be checked",
                hint="make it with sc.when(predicate, timeout=…)",
            )
        return trigger

    def landed(
        self, proof: ActionRecord, trigger: Fired | None, *, also: ActionRecord | None = None
    ) -> None:
        """Keep the proof of a write gated by ``trigger`` (``also``: the operator fault a
        probe write dates). An event trigger is resolved at once: the write came after it."""
        if trigger is None:
            return
        if trigger.predicate is None:
            for seq in (proof.seq, *(() if also is None else (also.seq,))):
                self._recorder.resolve_action(seq, in_window=True)
            return
        with self._lock:
            self._proofs.append(_Proof(proof, trigger, None if also is None else also.seq))

    def rule(self, record: ActionRecord, rule_id: str, interposer: Any) -> None:
        """Keep an interposer fault: it landed only if its rule took something (checked at
        the verdict, on the interposer's own counters)."""
        with self._lock:
            self._rules.append((record, rule_id, interposer))

    def refused(self, what: str) -> None:
        """Keep a write that did not land (the apiserver refused it): ``what`` says which and
        the apiserver's answer."""
        with self._lock:
            self._refused.append(what)

    def verify(self, history: History) -> list[str]:
        """Close the gate and re-check every trigger just before its proof's write; the
        writes that did not land, then those that missed their window, as text."""
        self.closed = True
        with self._lock:
            proofs = list(self._proofs)
            missed = list(self._refused)
            rules = list(self._rules)
        for record, rule_id, interposer in rules:
            view = interposer.rule(rule_id)  # an interposer that died: an infrastructure error
            if not view.get("matched"):
                self._recorder.resolve_action(record.seq, in_window=False)
                missed.append(
                    f"{record.action} {record.kind}/{record.name or '*'} never took effect: "
                    "its rule matched nothing the operator did while it stood"
                )
        for p in proofs:
            write_rv = p.record.write_rv
            held = write_rv is not None and bool(
                p.trigger.predicate(history.state_at_rv(write_rv - 1))  # type: ignore[misc]
            )
            for seq in (p.record.seq, *(() if p.also is None else (p.also,))):
                self._recorder.resolve_action(seq, in_window=held)
            what = f"{p.record.action} {p.record.kind}/{p.record.name}"
            if write_rv is None:
                missed.append(f"{what}: its write returned no resourceVersion to date it by")
            elif not held:
                missed.append(
                    f"{what} landed at rv {write_rv}, after its trigger '{p.trigger.name}' "
                    "stopped holding"
                )
        return missed
