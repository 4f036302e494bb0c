"""The one write path of a scenario: every write mo-chaos makes, faults included.

Writes go out through an identity of their own (user agent ``mochaos/chaos`` for the
topology and the faults, ``mochaos/agent`` for the platform agent) and only ever into the
one namespace the run created and labelled (anything else is refused before any write).
Each write's ActionRecord is appended before it is sent (an intent: whatever the write
causes comes after it in the history) and completed with the resourceVersion the apiserver
gave it, or with the apiserver's answer. A write given a trigger passes the gate
(:mod:`._gate`) before it is sent and leaves its proof there after.

A MatrixOne fault makes no write to the apiserver: the operator target's environment takes
a component down (:meth:`Writes.inject`), a probe write dates it, and the component comes
back when the fault's seconds pass, when the scenario releases it or at the end of the
test's body (:meth:`Writes.restore`, :meth:`Writes.restore_all`); the period it stood is
recorded, typed (``MATRIXONE_FAULT``). One the environment could not land (nothing runs
there to take down) makes the scenario inconclusive, like a refused write.

A write the apiserver refused (a 4xx answer: the object is gone, a conflict, invalid) makes
the scenario inconclusive at once, with the apiserver's answer in the message — it did not
happen, so nothing can be said of the interleaving it was for — unless the caller expects
that answer (``tolerate``: the agent's retries on a claim being deleted, the epilogue's
deletion of a claim already gone). An apiserver that does not answer, errs (5xx) or
refuses our credentials (401/403) is an infrastructure error.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.ctrl.rest import KINDS, ApiError, Kube, Unreachable
from mochaos.errors import Inconclusive, InfraError, MochaosError, UsageError
from mochaos.faults import (
    RESTORE_MATRIXONE,
    Fault,
    FaultKind,
    InterposerRule,
    MatrixOneFault,
    ObjectWrite,
    OperatorCall,
    Proof,
)
from mochaos.interpose.rules import Field, Rule
from mochaos.observe.history import MATRIXONE_FAULT, ActionRecord, State
from mochaos.observe.recorder import Recorder
from mochaos.operator.target import MatrixOneFaults, RunningOperator
from mochaos.progress import LOGGER
from mochaos.scenario._gate import Fired, Gate

CHAOS = "mochaos/chaos"
"""The user agent (and the history's component, ``chaos``) of the topology and the faults."""
AGENT = "mochaos/agent"
"""The user agent of the platform agent's writes (component ``agent``)."""
PROBE_ANNOTATION = "mochaos.io/window-probe"
"""Set on the test namespace by a probe write: its resourceVersion dates an operator fault."""
MERGE_PATCH = "application/merge-patch+json"
ANY_REFUSAL = range(400, 500)
"""``tolerate`` for a write whose refusal is expected whatever it says (the agent's retries)."""


class ScopeError(UsageError):
    """An action was aimed outside the namespaces this run created."""


def check_scope(kube: Kube, namespace: str, run_id: str) -> None:
    """Refuse to act unless ``namespace`` carries this run's id label."""
    try:
        ns = kube.request("GET", f"/api/v1/namespaces/{namespace}")
    except ApiError as err:
        raise ScopeError(
            f"namespace {namespace} cannot be read ({err.status})",
            hint="chaos acts only in namespaces the run created",
        ) from err
    labels = (ns.get("metadata") or {}).get("labels") or {}
    if labels.get(RUN_ID_LABEL) != run_id:
        raise ScopeError(
            f"namespace {namespace} was not created by this run (label {RUN_ID_LABEL}="
            f"{labels.get(RUN_ID_LABEL)!r}, run {run_id})",
            hint="use the `namespace` fixture; mo-chaos never acts elsewhere",
        )


def _rv_of(obj: Any) -> int | None:
    rv = ((obj or {}).get("metadata") or {}).get("resourceVersion")
    return int(rv) if rv else None


def _answer(err: ApiError) -> str:
    """The apiserver's answer in one line: ``404 NotFound: pods "x" not found``."""
    head = f"{err.status} {err.reason}".strip()
    return f"{head}: {err.message}" if err.message and err.message != head else head


@dataclass(frozen=True)
class Down:
    """A component a MatrixOne fault holds down: what brings it back."""

    component: str
    faults: MatrixOneFaults
    record: ActionRecord
    """The fault's record."""
    timer: threading.Timer | None = None
    """Brings it back when the fault's seconds pass (None: held until released)."""


class Writes:
    """The write path of one identity in one namespace (see the module docstring)."""

    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str,
        run_id: str,
        recorder: Recorder,
        gate: Gate,
        operator: RunningOperator | None,
        component: str,
    ) -> None:
        self.namespace = namespace
        self._kube = kube
        self._recorder = recorder
        self._gate = gate
        self._operator = operator
        self._component = component
        self._probes = 0
        self._lock = threading.Lock()
        self.rules: dict[int, str] = {}
        """The interposer rule each interposer fault's record stands for (by record seq)."""
        self.down: dict[int, Down] = {}
        """The MatrixOne components held down, by the seq of their fault's record."""
        check_scope(kube, namespace, run_id)

    # -- recording -----------------------------------------------------------------------

    def record(
        self,
        action: str,
        kind: str,
        name: str,
        *,
        params: Mapping[str, Any] | None = None,
        trigger: Fired | None = None,
        write_rv: int | None = None,
        fault: str | None = None,
        intent: bool = False,
    ) -> ActionRecord:
        """Record an action (one this path sends, or one made elsewhere: held sessions).
        ``intent``: recorded before the write is sent, completed when it returns."""
        return self._recorder.record_action(
            action=action,
            kind=kind,
            name=name,
            params=dict(params or {}),
            trigger=trigger.name if trigger else None,
            trigger_rv=trigger.rv if trigger else None,
            write_rv=write_rv,
            component=self._component,
            intent=intent,
            fault=fault,
        )

    def send(
        self,
        action: str,
        kind: str,
        name: str,
        method: str,
        path: str,
        *,
        body: Any = None,
        content_type: str = MERGE_PATCH,
        params: Mapping[str, Any] | None = None,
        trigger: object = None,
        fault: str | None = None,
        tolerate: Collection[int] = (),
    ) -> ActionRecord:
        """Send one write: gate, intent, the request, its record completed with the result.
        Raises Inconclusive when the apiserver refused it (unless its status is in
        ``tolerate``: the refused record is returned), InfraError when it did not answer."""
        fired = self._gate.admit(trigger)
        intent = self.record(action, kind, name, params=params, trigger=fired, fault=fault,
                             intent=True)  # fmt: skip
        try:
            result = self._kube.request(method, path, body=body, content_type=content_type)
        except ApiError as err:
            answer = _answer(err)
            refused = self._recorder.complete_action(intent.seq, error=answer)
            what = f"{action} {kind}/{name}"
            if isinstance(err, Unreachable) or err.status in (401, 403) or err.status >= 500:
                raise InfraError(f"{what}: the apiserver answered {answer}") from err
            if err.status in tolerate:
                return refused
            self._gate.refused(f"{what} did not land: the apiserver answered {answer}")
            raise Inconclusive(f"{what} did not land: the apiserver answered {answer}") from err
        except BaseException as err:
            self._recorder.complete_action(intent.seq, error=f"{type(err).__name__}: {err}")
            raise
        done = self._recorder.complete_action(intent.seq, write_rv=_rv_of(result))
        self._gate.landed(done, fired)
        return done

    def _object_write(
        self, kind: str, name: str, write: ObjectWrite, params: Mapping[str, Any], **send: Any
    ) -> ActionRecord:
        path = KINDS[kind].path(self.namespace, name, write.subresource or None)
        body = write.body(params) if write.body is not None else None
        return self.send(send.pop("action"), kind, name, write.method, path, body=body,
                         params=params, **send)  # fmt: skip

    # -- the topology's and the agent's writes -------------------------------------------

    def create(self, obj: dict[str, Any]) -> ActionRecord:
        """Create one object of the topology (CNPool, CNClaimSet, CNClaim) in the namespace."""
        kind, name = obj["kind"], obj["metadata"]["name"]
        obj["metadata"]["namespace"] = self.namespace
        path = KINDS[kind].path(self.namespace)
        return self.send("create", kind, name, "POST", path, body=obj,
                         content_type="application/json")  # fmt: skip

    def as_workload(
        self, kind: FaultKind, target: str, *, tolerate: Collection[int] = (), **params: Any
    ) -> ActionRecord:
        """The write a fault of ``kind`` makes, made as the workload's own (no fault, no
        gate): the epilogue's scale to 0 and deletions, a workload's scaling."""
        write = kind.apply
        assert isinstance(write, ObjectWrite), f"{kind.name} is not a write"
        return self._object_write(kind.target_kind or "", target, write, params,
                                  action=kind.action, tolerate=tolerate)  # fmt: skip

    def annotate_pod(self, pod: str, annotations: dict[str, str | None]) -> ActionRecord:
        """Set (or, with None, remove) pod annotations, e.g. the MO session score."""
        path = KINDS["Pod"].path(self.namespace, pod)
        body = {"metadata": {"annotations": annotations}}
        return self.send("annotate_pod", "Pod", pod, "PATCH", path, body=body,
                         params={"annotations": annotations})  # fmt: skip

    def patch_claim_spec(
        self,
        claim: str,
        spec: dict[str, Any],
        *,
        action: str,
        params: dict[str, Any],
        annotations: dict[str, str] | None = None,
        trigger: object = None,
        tolerate: Collection[int] = (),
    ) -> ActionRecord:
        """A JSON merge patch of a claim's spec (and annotations), as an external actor
        sends it."""
        body: dict[str, Any] = {"spec": spec}
        if annotations:
            body["metadata"] = {"annotations": annotations}
        return self.send(action, "CNClaim", claim, "PATCH",
                         KINDS["CNClaim"].path(self.namespace, claim), body=body, params=params,
                         trigger=trigger, tolerate=tolerate)  # fmt: skip

    def probe(self) -> ActionRecord:
        """A write to the test namespace that only dates a moment: its resourceVersion is on
        the one etcd clock of every object, so a trigger can be re-checked at it."""
        with self._lock:
            self._probes += 1
            n = self._probes
        body = {"metadata": {"annotations": {PROBE_ANNOTATION: str(n)}}}
        return self.send("window_probe", "Namespace", self.namespace, "PATCH",
                         f"/api/v1/namespaces/{self.namespace}", body=body)  # fmt: skip

    # -- faults --------------------------------------------------------------------------

    def inject(self, fault: Fault, *, trigger: object = None, state: State) -> ActionRecord:
        """Apply ``fault`` as its kind says (:mod:`mochaos.faults`), gated by ``trigger``;
        ``state`` is the recorded state its derived parameters are read from."""
        kind = fault.kind
        fired = self._gate.admit(trigger)
        params = dict(fault.params)
        if kind.derive is not None:
            obj = state.get(kind.target_kind or "", fault.target)
            if obj is None:
                raise Inconclusive(f"{fault.label}: {kind.target_kind} {fault.target} is gone")
            params.update(kind.derive(obj))
        if isinstance(kind.apply, ObjectWrite):
            record = self._object_write(
                kind.target_kind or "", fault.target, kind.apply, params, action=kind.action,
                trigger=fired, fault=kind.name,
            )  # fmt: skip
        elif isinstance(kind.apply, InterposerRule):
            record = self._interposer_fault(fault, kind.apply, params, fired, state)
        elif isinstance(kind.apply, MatrixOneFault):
            record = self._matrixone_fault(fault, kind.apply, params, fired)
        else:
            record = self._operator_fault(fault, kind.apply, params, fired)
        LOGGER.info("fault injected: %s%s", fault.label, f" (when {fired.name})" if fired else "")
        return record

    def _interposer_fault(
        self,
        fault: Fault,
        spec: InterposerRule,
        params: dict[str, Any],
        fired: Fired | None,
        state: State,
    ) -> ActionRecord:
        """A rule of the operator's interposer, dated by a probe write just after it took
        effect when its trigger is a state; the gate checks at the verdict that it took
        something (a rule that never matched is a fault that did not happen)."""
        operator = self._operator
        interposer = None if operator is None else operator.interposer
        if interposer is None:
            raise UsageError(
                f"{fault.label} needs the operator's interposer",
                hint="run on the local cluster with --mochaos-interposer on",
            )
        rule = self._rule(fault, spec, params, state)
        shown = {k: v for k, v in params.items() if v not in (None, (), {})}
        record = self.record(fault.kind.action, params["kind"], fault.target, params=shown,
                             trigger=fired, fault=fault.kind.name)  # fmt: skip
        interposer.add(rule)
        self.rules[record.seq] = rule.id
        if spec.action == "stale-list":  # its next list is the restarted operator's first
            operator.restart()  # type: ignore[union-attr]
        elif spec.action == "crash":  # the operator dies with the write; a new one starts
            threading.Thread(target=self._after_crash, args=(rule.id,), daemon=True,
                             name=f"after-{rule.id}").start()  # fmt: skip
        self._gate.rule(record, rule.id, interposer)
        if fired is not None and fired.predicate is not None:
            self._gate.landed(self.probe(), fired, also=record)
        elif fired is not None:
            self._gate.landed(record, fired)
        return record

    def _rule(
        self, fault: Fault, spec: InterposerRule, params: dict[str, Any], state: State
    ) -> Rule:
        """The interposer's rule for ``fault`` (a usage error when it could never match)."""
        kind = str(params["kind"])
        fields = [Field(f"metadata.labels.{k.replace('.', chr(92) + '.')}", "eq", v)
                  for k, v in (params.get("labels") or {}).items()]  # fmt: skip
        fields += [Field(*f) for f in params.get("fields") or ()]
        with self._lock:
            rule_id = f"{fault.kind.name}-{len(self.rules) + 1}"
        listed = None
        if spec.action == "stale-list":
            at = int(params["at"])
            listed = _listed(kind, self._recorder.history().state_at_rv(at), at)
        pid = getattr(self._operator, "pid", None) if spec.action == "crash" else None
        return Rule(
            rule_id, spec.action, kind, self.namespace,
            verbs=tuple(params.get("verbs") or spec.verbs), name=fault.target or None,
            subresource=params.get("subresource"), fields=tuple(fields),
            times=None if spec.action in ("freeze", "coalesce") else params.get("times"),
            timeout_seconds=None if spec.action == "fail" and params.get("status") != 504
            else params.get("timeout"),
            status=params.get("status"),
            signal_pid=pid, listed=listed,
        )  # fmt: skip

    def _after_crash(self, rule_id: str) -> None:
        """Once the interposer withheld the answer of the crash rule's write (and killed the
        operator, when it knew its pid): stop what is left of the operator, start it again,
        drop the withheld answer. Ends with the scenario's verdict."""
        operator = self._operator
        interposer = None if operator is None else operator.interposer
        since = 0
        while interposer is not None and not self._gate.closed:
            try:
                since, records = interposer.wait(since, timeout=2.0, rule=rule_id)
            except MochaosError:
                return  # the interposer is gone: the verdict names it
            if any(r.get("what") == "crashed" for r in records):
                operator.restart()  # type: ignore[union-attr]
                self.record("restart_operator", "Operator", "operator",
                            params={"after": rule_id})  # fmt: skip
                interposer.release(rule_id, drop=True)
                return

    def _operator_fault(
        self, fault: Fault, call: OperatorCall, params: dict[str, Any], fired: Fired | None
    ) -> ActionRecord:
        """An operator fault makes no write: a probe write dates it (just before a restart,
        just after a kill or a freeze) when its trigger is a state."""
        if self._operator is None:
            raise UsageError(
                f"{fault.label} needs an operator target", hint="use the operator fixture"
            )
        kind, operator = fault.kind, self._operator
        dated = fired is not None and fired.predicate is not None
        probe = self.probe() if dated and kind.proof is Proof.PROBE_BEFORE else None
        if call.method == "pause":
            operator.pause(params["seconds"])
        else:
            getattr(operator, call.method)()
        shown = {k: v for k, v in params.items() if v is not None}
        record = self.record(kind.action, "Operator", "operator", params=shown, trigger=fired,
                             fault=kind.name)  # fmt: skip
        if dated and kind.proof is Proof.PROBE_AFTER:
            probe = self.probe()
        if probe is not None:
            self._gate.landed(probe, fired, also=record)
        elif fired is not None:
            self._gate.landed(record, fired)
        if params.get("downtime") is not None:  # a crashed pod, restarted by its kubelet
            threading.Event().wait(params["downtime"])
            operator.restart()
            self.record("restart_operator", "Operator", "operator")
        return record

    def _matrixone_fault(
        self, fault: Fault, spec: MatrixOneFault, params: dict[str, Any], fired: Fired | None
    ) -> ActionRecord:
        """One of MatrixOne's components made unreachable by the operator target's
        environment, dated by a probe write just after it is down when its trigger is a
        state; its period starts (brought back by :meth:`restore`)."""
        faults = None if self._operator is None else self._operator.matrixone
        if faults is None or spec.component not in faults.components:
            raise UsageError(
                f"{fault.label} needs a target whose MatrixOne can make {spec.component} "
                "unreachable",
                hint="a real manager on the local cluster (binary:, source:, image:: the "
                "MatrixOne double); model:<p> plays HAKeeper only",
            )
        component = spec.of(fault.target)
        with self._lock:
            if any(d.component == component for d in self.down.values()):
                raise UsageError(f"{fault.label}: {component} is already down",
                                 hint="release the fault that holds it first")  # fmt: skip
        try:
            where = faults.down(component, how=params["how"])
        except Inconclusive as err:
            self._gate.refused(f"{fault.label} did not land: {err}")
            raise
        self._recorder.period(MATRIXONE_FAULT, "start", subject=component,
                              reason=params["how"], component=self._component)  # fmt: skip
        shown = {**{k: v for k, v in params.items() if v is not None},
                 "component": component, "at": where}  # fmt: skip
        record = self.record(fault.kind.action, fault.kind.target_kind or "",
                             fault.target or component, params=shown, trigger=fired,
                             fault=fault.kind.name)  # fmt: skip
        timer = None
        if params.get("seconds") is not None:
            timer = threading.Timer(float(params["seconds"]), self._restore_later, (record.seq,))
            timer.daemon = True
        with self._lock:
            self.down[record.seq] = Down(component, faults, record, timer)
        if timer is not None:
            timer.start()
        if fired is not None and fired.predicate is not None:
            self._gate.landed(self.probe(), fired, also=record)
        elif fired is not None:
            self._gate.landed(record, fired)
        return record

    def restore(self, seq: int) -> bool:
        """Bring back the component the MatrixOne fault recorded at ``seq`` holds down and
        end its period; False when it was not down (already brought back)."""
        with self._lock:
            down = self.down.pop(seq, None)
        if down is None:
            return False
        if down.timer is not None:
            down.timer.cancel()
        try:
            down.faults.up(down.component)
        except BaseException:
            with self._lock:  # still down: the end of the test tries again
                self.down[seq] = Down(down.component, down.faults, down.record)
            raise
        self._recorder.period(MATRIXONE_FAULT, "end", subject=down.component,
                              component=self._component)  # fmt: skip
        self.record(RESTORE_MATRIXONE, down.record.kind, down.record.name,
                    params={"fault": down.record.fault, "component": down.component})  # fmt: skip
        LOGGER.info("fault released: %s %s", down.record.fault, down.record.name)
        return True

    def restore_all(self) -> int:
        """Bring back every component a MatrixOne fault holds down (each is tried; the first
        failure is raised after); how many were down."""
        with self._lock:
            seqs = list(self.down)
        failed: BaseException | None = None
        for seq in seqs:
            try:
                self.restore(seq)
            except Exception as err:  # try the others: nothing may stay down past the test
                failed = failed or err
        if failed is not None:
            raise failed
        return len(seqs)

    def _restore_later(self, seq: int) -> None:
        """The timer of a fault with seconds: bring its component back (a failure leaves it
        to the end of the test, which tries again)."""
        try:
            self.restore(seq)
        except Exception as err:
            LOGGER.warning("bringing back a MatrixOne component failed: %s", err)


def _listed(kind: str, state: State, rv: int) -> dict[str, Any]:
    """The List the apiserver would have answered for ``kind`` at resourceVersion ``rv`` of
    the run's history (``state``: the objects as of ``rv``; a kind the recorder watches)."""
    if kind not in KINDS:
        raise UsageError(f"no earlier state of {kind} to restart onto: it is not recorded",
                         hint=f"use one of {', '.join(KINDS)}")  # fmt: skip
    api_version = KINDS[kind].api_version
    items = [{"apiVersion": api_version, "kind": kind, **obj} for obj in state.all(kind).values()]
    return {"apiVersion": api_version, "kind": f"{kind}List",
            "metadata": {"resourceVersion": str(rv)}, "items": items}  # fmt: skip
