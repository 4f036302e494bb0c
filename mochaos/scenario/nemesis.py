"""The nemesis: the faults a scenario injects, each with proof of when it landed.

A fault may be gated by a trigger (:meth:`Triggers.when`): the action records the
resourceVersion of the observation that fired the trigger and of its own write; at the
end :meth:`Nemesis.verify_windows` re-evaluates the trigger on the state just before the
write (a fault that itself ends the state it aimed at still landed in its window). A
fault that landed after its trigger stopped holding proves nothing: the scenario is
then inconclusive. An operator fault makes no write: a probe write
(:meth:`Actions.probe`) dates it, right after a kill or a freeze, right before a restart.
"""

from __future__ import annotations

from dataclasses import dataclass

from mochaos.observe.history import ActionRecord, History
from mochaos.observe.recorder import Recorder
from mochaos.progress import LOGGER
from mochaos.scenario.actions import Actions, Fired
from mochaos.scenario.predicates import Predicate


@dataclass
class _Gated:
    record: ActionRecord
    """The write whose version is checked (the fault's own, or its probe)."""
    predicate: Predicate
    fault_seq: int | None = None
    """The operator fault a probe stands for (resolved with it)."""


class Nemesis:
    """Faults on one namespace's objects and on the operator under test."""

    def __init__(self, actions: Actions, recorder: Recorder) -> None:
        self._actions = actions
        self._recorder = recorder
        self._gated: list[_Gated] = []

    def _landed(
        self, record: ActionRecord, trigger: Fired | None, *, probe: ActionRecord | None = None
    ) -> ActionRecord:
        LOGGER.info(
            "fault injected: %s %s/%s%s",
            record.action, record.kind, record.name,
            f" (when {trigger.name})" if trigger else "",
        )  # fmt: skip
        proof = probe or record
        if trigger is not None and trigger.predicate is not None and proof.write_rv is not None:
            self._gated.append(
                _Gated(proof, trigger.predicate, record.seq if probe is not None else None)
            )
        return record

    def _probe(self, trigger: Fired | None) -> ActionRecord | None:
        """A probe write for an operator fault gated by a predicate (None otherwise)."""
        if trigger is None or trigger.predicate is None:
            return None
        return self._actions.probe(trigger=trigger)

    def scale_claimset(
        self, claimset: str, *, replicas: int, trigger: Fired | None = None
    ) -> ActionRecord:
        """Scale a claim set (gated when ``trigger`` came from a ``when``)."""
        rec = self._actions.scale_claimset(claimset, replicas=replicas, trigger=trigger)
        return self._landed(rec, trigger)

    def delete_pod(self, pod: str, *, trigger: Fired | None = None) -> ActionRecord:
        """Delete a CN pod."""
        return self._landed(self._actions.delete_pod(pod, trigger=trigger), trigger)

    def delete_claim(self, claim: str, *, trigger: Fired | None = None) -> ActionRecord:
        """Delete a claim."""
        return self._landed(self._actions.delete_claim(claim, trigger=trigger), trigger)

    def remove_label(self, pod: str, *, key: str, trigger: Fired | None = None) -> ActionRecord:
        """Remove one label from a pod."""
        return self._landed(self._actions.remove_label(pod, key=key, trigger=trigger), trigger)

    def restart_operator(self, *, trigger: Fired | None = None) -> ActionRecord:
        """Stop and start the operator (it relists every object); a gated restart's probe is
        written just before the stop is sent."""
        probe = self._probe(trigger)
        return self._landed(self._actions.restart_operator(trigger=trigger), trigger, probe=probe)

    def pause_operator(self, seconds: float, *, trigger: Fired | None = None) -> ActionRecord:
        """Freeze the operator's process for ``seconds``; it resumes on its own."""
        record = self._actions.pause_operator(seconds, trigger=trigger)
        return self._landed(record, trigger, probe=self._probe(trigger))

    def kill_operator(self, *, trigger: Fired | None = None) -> ActionRecord:
        """Kill the operator; it stays down."""
        record = self._actions.kill_operator(trigger=trigger)
        return self._landed(record, trigger, probe=self._probe(trigger))

    def verify_windows(self, history: History) -> list[str]:
        """Re-check every gated fault's trigger just before its write; the misses, as text."""
        missed = []
        for g in self._gated:
            held = bool(g.predicate(history.state_at_rv((g.record.write_rv or 1) - 1)))
            self._recorder.resolve_action(g.record.seq, in_window=held)
            if g.fault_seq is not None:
                self._recorder.resolve_action(g.fault_seq, in_window=held)
            if not held:
                missed.append(
                    f"{g.record.action} {g.record.kind}/{g.record.name} landed at rv "
                    f"{g.record.write_rv}, after its trigger '{g.record.trigger}' stopped holding"
                )
        return missed
