"""In-place updates (kruise util/inplaceupdate/inplace_update.go and
inplace_update_defaults.go at v1.4.0).

A pod can be updated in place when its revision's template and the target template differ
only in ``metadata.labels`` / ``metadata.annotations`` and in container images
(defaultCalculateInPlaceUpdateSpec). The update turns ``InPlaceUpdateReady`` False, writes the
new revision labels and the ``apps.kruise.io/inplace-update-state`` annotation, and either
patches the pod at once or — with ``gracePeriodSeconds`` (the operator's CloneSets use 10) —
parks the change in ``apps.kruise.io/inplace-update-grace`` until the grace has passed
(finishGracePeriod). ``InPlaceUpdateReady`` turns True again once nothing is pending.

Where kruise then waits for the kubelet to restart changed containers (imageID checks,
kruise-daemon's container metadata), the double does not: kwok runs no containers, so an
in-place update is complete as soon as its patch (or its grace) is done.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime

from mochaos.doubles.kruise import keys
from mochaos.doubles.kruise.api import PODS, Obj
from mochaos.doubles.kruise.naming import short_hash
from mochaos.doubles.kruise.objects import (
    annotations_of,
    condition,
    has_readiness_gate,
    now_rfc3339,
    parse_time,
)
from mochaos.doubles.kruise.readiness import set_pod_ready_condition
from mochaos.doubles.kruise.writer import Writer

STATE_KEY = "apps.kruise.io/inplace-update-state"
GRACE_KEY = "apps.kruise.io/inplace-update-grace"


@dataclass
class UpdateSpec:
    """What an in-place update changes (``None`` values delete the key)."""

    revision: str
    images: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str | None] = field(default_factory=dict)
    annotations: dict[str, str | None] = field(default_factory=dict)
    grace_seconds: int = 0

    def dump(self) -> str:
        """JSON for the grace annotation."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def load(cls, text: str) -> UpdateSpec:
        """Read it back."""
        return cls(**json.loads(text))


def _meta_diff(old: dict[str, str], new: dict[str, str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {k: v for k, v in new.items() if old.get(k) != v}
    out.update({k: None for k in old if k not in new})
    return out


def calculate_spec(
    old: Obj | None, new: Obj, revision: str, *, grace_seconds: int
) -> UpdateSpec | None:
    """The in-place change from template ``old`` to ``new``; None when something other
    than labels, annotations or container images differs (or ``old`` is unknown)."""
    if old is None:
        return None
    old_spec, new_spec = copy.deepcopy(old.get("spec") or {}), copy.deepcopy(new.get("spec") or {})
    old_containers = old_spec.get("containers") or []
    new_containers = new_spec.get("containers") or []
    if len(old_containers) != len(new_containers):
        return None
    images: dict[str, str] = {}
    for before, after in zip(old_containers, new_containers, strict=True):
        if before.get("image") != after.get("image"):
            images[before.get("name", "")] = after.get("image", "")
        before.pop("image", None)
        after.pop("image", None)
    if old_spec != new_spec:
        return None
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    others = {k for k in set(old_meta) | set(new_meta) if k not in ("labels", "annotations")}
    if any(old_meta.get(k) != new_meta.get(k) for k in others):
        return None
    return UpdateSpec(
        revision=revision,
        images=images,
        labels=_meta_diff(old_meta.get("labels") or {}, new_meta.get("labels") or {}),
        annotations=_meta_diff(
            old_meta.get("annotations") or {}, new_meta.get("annotations") or {}
        ),
        grace_seconds=grace_seconds,
    )


def _patch_spec_to_pod(pod: Obj, spec: UpdateSpec) -> None:
    """defaultPatchUpdateSpecToPod: metadata changes and container images."""
    labels = pod["metadata"].setdefault("labels", {})
    annotations = pod["metadata"].setdefault("annotations", {})
    for target, changes in ((labels, spec.labels), (annotations, spec.annotations)):
        for key, value in changes.items():
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value
    for container in pod["spec"].get("containers") or []:
        if container.get("name") in spec.images:
            container["image"] = spec.images[container["name"]]


def _write_revision(pod: Obj, revision: str, *, cloneset: bool) -> None:
    labels = pod["metadata"].setdefault("labels", {})
    labels[keys.CONTROLLER_REVISION_HASH] = revision
    if cloneset:
        labels[keys.POD_TEMPLATE_HASH] = short_hash(revision)


def update(
    writer: Writer, pod: Obj, spec: UpdateSpec, *, cloneset: bool, lifecycle_state: str
) -> None:
    """realControl.Update: InPlaceUpdateReady False, then the revision, the state annotation
    and the change (or the grace annotation) in one pod update. ``lifecycle_state`` ("" for
    none) is stamped as the update's additional function does."""
    if has_readiness_gate(pod, keys.IN_PLACE_UPDATE_READY):
        _set_in_place_ready(writer, pod, "False", reason="StartInPlaceUpdate")

    def mutate(current: Obj) -> bool:
        _write_revision(current, spec.revision, cloneset=cloneset)
        annotations = current["metadata"].setdefault("annotations", {})
        if lifecycle_state:
            current["metadata"]["labels"][keys.LIFECYCLE_STATE] = lifecycle_state
            annotations[keys.LIFECYCLE_TIMESTAMP] = now_rfc3339()
        annotations[STATE_KEY] = json.dumps(
            {"revision": spec.revision, "updateTimestamp": now_rfc3339()}
        )
        if spec.grace_seconds <= 0:
            _patch_spec_to_pod(current, spec)
            annotations.pop(GRACE_KEY, None)
        else:
            annotations[GRACE_KEY] = spec.dump()
        return True

    writer.update_fresh(
        PODS,
        pod,
        mutate,
        msg="update pod in place",
        pod=pod["metadata"]["name"],
        revision=spec.revision,
        images=spec.images,
        grace_seconds=spec.grace_seconds,
    )


def in_grace(pod: Obj) -> bool:
    """The pod has an in-place change parked for its grace period."""
    return GRACE_KEY in annotations_of(pod)


def refresh(writer: Writer, pod: Obj, now: datetime) -> float:
    """Refresh: finish a grace period that is over (or drop a stale one), else set
    InPlaceUpdateReady True when nothing is pending. Returns seconds to wait for a grace."""
    grace = annotations_of(pod).get(GRACE_KEY)
    if grace is not None:
        spec = UpdateSpec.load(grace)
        state = json.loads(annotations_of(pod).get(STATE_KEY) or "{}")
        started = parse_time(state.get("updateTimestamp"))
        revision = (pod["metadata"].get("labels") or {}).get(keys.CONTROLLER_REVISION_HASH, "")
        same = short_hash(revision) == short_hash(spec.revision)
        left = spec.grace_seconds - (now - started).total_seconds() if started else 0.0
        if same and left > 0:
            return left

        def finish(current: Obj) -> bool:
            if same:
                _patch_spec_to_pod(current, spec)
            current["metadata"]["annotations"].pop(GRACE_KEY, None)
            return True

        msg = "finish in-place update grace" if same else "drop stale in-place update grace"
        writer.update_fresh(PODS, pod, finish, msg=msg, pod=pod["metadata"]["name"])
        return 0.0
    cond = condition(pod, keys.IN_PLACE_UPDATE_READY)
    if has_readiness_gate(pod, keys.IN_PLACE_UPDATE_READY) and (
        cond is None or cond.get("status") != "True"
    ):
        _set_in_place_ready(writer, pod, "True", reason="")
    return 0.0


def _set_in_place_ready(writer: Writer, pod: Obj, status: str, *, reason: str) -> None:
    """updateCondition: set InPlaceUpdateReady (turning Ready False with it when False)."""

    def mutate(current: Obj) -> bool:
        existing = condition(current, keys.IN_PLACE_UPDATE_READY)
        if existing is not None and existing.get("status") == status:
            return False
        cond: Obj = {
            "type": keys.IN_PLACE_UPDATE_READY,
            "status": status,
            "lastTransitionTime": now_rfc3339(),
        }
        if reason:
            cond["reason"] = reason
        conditions = current.setdefault("status", {}).setdefault("conditions", [])
        if existing is None:
            conditions.append(cond)
        else:
            conditions[conditions.index(existing)] = cond
        if status == "False":
            set_pod_ready_condition(current)
        return True

    writer.update_fresh(PODS, pod, mutate, msg=f"set in-place update ready {status}", sub="status")
