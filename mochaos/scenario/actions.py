"""Chaos actions: every write a scenario makes, recorded with proof of when it landed.

Each action writes through its own API client (user agent ``mochaos/chaos``).
Its ActionRecord is appended before the write is sent (an intent: whatever the
write causes comes after it in the history) and completed with the
resourceVersion the apiserver gave the write, or its error; when it was gated
by a trigger, it names the trigger and the version of the observation that
fired it. Actions only ever touch the one namespace the run created and
labelled; anything else is refused before any write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.ctrl.objects import GROUP, RUN_ID_LABEL, VERSION
from mochaos.ctrl.rest import KINDS
from mochaos.errors import InfraError, UsageError
from mochaos.observe.history import ActionRecord, Entry, State
from mochaos.observe.recorder import Recorder
from mochaos.operator.target import RunningOperator

USER_AGENT = "mochaos/chaos"
PROBE_ANNOTATION = "mochaos.io/window-probe"
"""Set on the test namespace by a probe write: its resourceVersion dates an operator fault."""


@dataclass(frozen=True)
class Fired:
    """Evidence that a trigger held: its name, the observation that made it true, and the
    predicate itself (so the window can be re-checked at the version of our write)."""

    name: str
    entry: Entry | None
    rv: int | None
    predicate: Callable[[State], bool] | None = field(default=None, compare=False)


class ScopeError(UsageError):
    """An action was aimed outside the namespaces this run created."""


def check_scope(core: client.CoreV1Api, namespace: str, run_id: str) -> None:
    """Refuse to act unless ``namespace`` carries this run's id label."""
    try:
        ns = core.read_namespace(namespace)
    except ApiException as err:
        raise ScopeError(
            f"namespace {namespace} cannot be read ({err.status})",
            hint="chaos acts only in namespaces the run created",
        ) from err
    labels = ns.metadata.labels or {}
    if labels.get(RUN_ID_LABEL) != run_id:
        raise ScopeError(
            f"namespace {namespace} was not created by this run (label {RUN_ID_LABEL}="
            f"{labels.get(RUN_ID_LABEL)!r}, run {run_id})",
            hint="use the `namespace` fixture; mo-chaos never acts elsewhere",
        )


def _rv_of(obj: Any) -> int | None:
    if isinstance(obj, dict):
        rv = (obj.get("metadata") or {}).get("resourceVersion")
    else:
        meta = getattr(obj, "metadata", None)
        rv = getattr(meta, "resource_version", None)
    return int(rv) if rv else None


class Actions:
    """The chaos actions (docs/writing-scenarios.md) bound to one namespace, recorder and
    operator."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        namespace: str,
        run_id: str,
        recorder: Recorder,
        operator: RunningOperator | None,
    ) -> None:
        self.namespace = namespace
        self._core = client.CoreV1Api(api)
        self._custom = client.CustomObjectsApi(api)
        self._recorder = recorder
        self._operator = operator
        self._probes = 0
        check_scope(self._core, namespace, run_id)

    # -- recording -------------------------------------------------------------

    def record(
        self,
        action: str,
        kind: str,
        name: str,
        *,
        params: dict[str, Any] | None = None,
        trigger: Fired | None = None,
        write_rv: int | None = None,
        error: str | None = None,
        component: str = "chaos",
        intent: bool = False,
    ) -> ActionRecord:
        """Record an action (one this class wrote, or one made elsewhere, e.g. sessions).

        ``intent``: recorded before the write is sent, completed when it returns.
        """
        return self._recorder.record_action(
            action=action,
            kind=kind,
            name=name,
            params=params or {},
            trigger=trigger.name if trigger else None,
            trigger_rv=trigger.rv if trigger else None,
            write_rv=write_rv,
            error=error,
            component=component,
            intent=intent,
        )

    def _write(self, action: str, kind: str, name: str, call, **record: Any) -> ActionRecord:
        """Record the intent, send the write, complete the record with its result."""
        intent = self.record(action, kind, name, intent=True, **record)
        done = self._recorder.complete_action
        try:
            result = call()
        except ApiException as err:
            failed = done(intent.seq, error=f"{err.status} {err.reason}")
            if err.status in (401, 403):
                raise InfraError(f"{action} {kind}/{name} refused ({err.status})") from err
            if err.status is None or err.status >= 500:
                raise InfraError(f"{action} {kind}/{name}: apiserver error {err.status}") from err
            return failed
        except BaseException as err:
            done(intent.seq, error=f"{type(err).__name__}: {err}")
            raise
        return done(intent.seq, write_rv=_rv_of(result))

    # -- objects ---------------------------------------------------------------

    def create(self, obj: dict[str, Any]) -> ActionRecord:
        """Create one object of the topology (CNPool, CNClaimSet, CNClaim) in the namespace."""
        kind = obj["kind"]
        name = obj["metadata"]["name"]
        obj["metadata"]["namespace"] = self.namespace
        return self._write(
            "create",
            kind,
            name,
            lambda: self._custom.create_namespaced_custom_object(
                GROUP, VERSION, self.namespace, KINDS[kind].plural, obj
            ),
        )

    def scale_claimset(
        self, claimset: str, *, replicas: int, trigger: Fired | None = None
    ) -> ActionRecord:
        """Set a CNClaimSet's replicas through its scale subresource."""
        body = {"spec": {"replicas": replicas}}
        return self._write(
            "scale_claimset",
            "CNClaimSet",
            claimset,
            lambda: self._custom.patch_namespaced_custom_object_scale(
                GROUP, VERSION, self.namespace, "cnclaimsets", claimset, body
            ),
            params={"replicas": replicas},
            trigger=trigger,
        )

    def delete_pod(self, pod: str, *, trigger: Fired | None = None) -> ActionRecord:
        """Delete a CN pod (kwok removes it at once; a real kubelet after its grace)."""
        return self._write(
            "delete_pod",
            "Pod",
            pod,
            lambda: self._core.delete_namespaced_pod(pod, self.namespace),
            trigger=trigger,
        )

    def delete_claim(self, claim: str, *, trigger: Fired | None = None) -> ActionRecord:
        """Delete a CNClaim (its finalizer keeps it until the operator finalizes it)."""
        return self._write(
            "delete_claim",
            "CNClaim",
            claim,
            lambda: self._custom.delete_namespaced_custom_object(
                GROUP, VERSION, self.namespace, "cnclaims", claim
            ),
            trigger=trigger,
        )

    def remove_label(self, pod: str, *, key: str, trigger: Fired | None = None) -> ActionRecord:
        """Remove one label from a pod."""
        body = {"metadata": {"labels": {key: None}}}
        return self._write(
            "remove_label",
            "Pod",
            pod,
            lambda: self._core.patch_namespaced_pod(pod, self.namespace, body),
            params={"key": key},
            trigger=trigger,
        )

    def annotate_pod(
        self, pod: str, *, annotations: dict[str, str | None], trigger: Fired | None = None
    ) -> ActionRecord:
        """Set (or, with None, remove) pod annotations, e.g. the MO session score."""
        body = {"metadata": {"annotations": annotations}}
        return self._write(
            "annotate_pod",
            "Pod",
            pod,
            lambda: self._core.patch_namespaced_pod(pod, self.namespace, body),
            params={"annotations": annotations},
            trigger=trigger,
        )

    def patch_claim_spec(
        self,
        claim: str,
        spec: dict[str, Any],
        *,
        component: str,
        action: str,
        params: dict[str, Any],
        annotations: dict[str, str] | None = None,
        trigger: Fired | None = None,
    ) -> ActionRecord:
        """A JSON merge patch of a claim's spec (and annotations), as an external actor sends it."""
        body: dict[str, Any] = {"spec": spec}
        if annotations:
            body["metadata"] = {"annotations": annotations}
        return self._write(
            action,
            "CNClaim",
            claim,
            lambda: self._custom.patch_namespaced_custom_object(
                GROUP, VERSION, self.namespace, "cnclaims", claim, body
            ),
            params=params,
            trigger=trigger,
            component=component,
        )

    def probe(self, *, trigger: Fired | None = None) -> ActionRecord:
        """A write to the test namespace that only dates a moment: its resourceVersion is on
        the one etcd clock of every object, so a trigger can be re-checked at it."""
        self._probes += 1
        body = {"metadata": {"annotations": {PROBE_ANNOTATION: str(self._probes)}}}
        return self._write(
            "window_probe",
            "Namespace",
            self.namespace,
            lambda: self._core.patch_namespace(self.namespace, body),
            trigger=trigger,
        )

    # -- the operator ----------------------------------------------------------

    def _need_operator(self, action: str) -> RunningOperator:
        if self._operator is None:
            raise UsageError(f"{action} needs an operator target", hint="use the operator fixture")
        return self._operator

    def restart_operator(self, *, trigger: Fired | None = None) -> ActionRecord:
        """Stop and start the operator (a fresh list/watch enqueues every object once)."""
        self._need_operator("restart_operator").restart()
        return self.record("restart_operator", "Operator", "operator", trigger=trigger)

    def pause_operator(self, seconds: float, *, trigger: Fired | None = None) -> ActionRecord:
        """Freeze the operator for ``seconds`` (it resumes on its own)."""
        self._need_operator("pause_operator").pause(seconds)
        return self.record(
            "pause_operator", "Operator", "operator", params={"seconds": seconds}, trigger=trigger
        )

    def kill_operator(self, *, trigger: Fired | None = None) -> ActionRecord:
        """Kill the operator without letting it clean up (it stays down)."""
        self._need_operator("kill_operator").kill()
        return self.record("kill_operator", "Operator", "operator", trigger=trigger)
