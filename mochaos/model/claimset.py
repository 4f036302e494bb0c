"""The CNClaimSet controller (``cn-claimset-manager``): owned/lost split, scale, cleanup.

Modelled on cnclaimset/controller.go (identical at eb9b356 and 2301e3b), docs/operator-behaviour.md
§5; scale-in candidates are ordered with every tie-breaker of ``claimDeletionOrder``.
"""

from __future__ import annotations

from functools import cmp_to_key

from mochaos.ctrl.objects import CLAIMSET_LABEL as CLAIMSET
from mochaos.ctrl.objects import DELETION_COST_ANNOTATION as DELETION_COST
from mochaos.ctrl.objects import INSTANCE_ID_LABEL as INSTANCE_ID
from mochaos.ctrl.rest import CLAIMS, CLAIMSETS, PODS, ApiError, NotFound, Obj
from mochaos.model.dict_helpers import deleting, labels_of, name_of, rand_string, selector_matches
from mochaos.model.profiles import Profile
from mochaos.model.runtime.context import Context, OperatorError, ReSync, wrap
from mochaos.model.timing import Timing, parse_time

NAME = "cn-claimset-manager"
ID_LENGTH = 5

SRC = "cnclaimset/controller.go"

_CLAIM_PHASE_ORDER = {"Pending": 0, "Lost": 1, "Outdated": 2, "Bound": 3}
_POD_PHASE_ORDER = {"Pending": 0, "Failed": 1, "Running": 2}


def split_claims(claims: list[Obj], selector: Obj | None) -> tuple[list[Obj], list[Obj]]:
    """listOwnedClaims (controller.go:389-409): claims matching the selector, split into owned
    and lost (phase Lost, no instance-id, or deleting).
    """
    owned, lost = [], []
    for c in claims:
        if not selector_matches(selector, labels_of(c)):
            continue
        if (
            c.get("status", {}).get("phase") == "Lost"
            or not labels_of(c).get(INSTANCE_ID)
            or deleting(c)
        ):
            lost.append(c)
        else:
            owned.append(c)
    return owned, lost


def _seconds_between(a: str, b: str) -> int:
    """``int(a.Sub(b).Seconds())``: whole seconds, truncated toward zero."""
    return int(parse_time(a) - parse_time(b))


def _created(obj: Obj) -> str:
    return obj["metadata"].get("creationTimestamp", "1970-01-01T00:00:00Z")


def _ready(pod: Obj) -> bool:
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def _deletion_cost(pod: Obj) -> int:
    raw = (pod["metadata"].get("annotations") or {}).get(DELETION_COST)
    try:
        value = int(raw) if raw is not None else 0
    except ValueError:
        return 0
    return value if -(2**31) <= value < 2**31 else 0


def pod_deletion_order(a: Obj, b: Obj) -> int:
    """podDeletionOrder (controller.go:313-340): unscheduled, then Pending < Failed < Running,
    then not-Ready, then lower deletion cost, then the newer pod first.
    """
    node_a = a.get("spec", {}).get("nodeName", "")
    node_b = b.get("spec", {}).get("nodeName", "")
    if node_a != node_b and (not node_a or not node_b):
        return len(node_a) - len(node_b)
    phase_a = _POD_PHASE_ORDER.get(a.get("status", {}).get("phase", ""), 0)
    phase_b = _POD_PHASE_ORDER.get(b.get("status", {}).get("phase", ""), 0)
    if phase_a != phase_b:
        return phase_a - phase_b
    if _ready(a) != _ready(b):
        return 1 if _ready(a) else -1
    cost_a, cost_b = _deletion_cost(a), _deletion_cost(b)
    if cost_a != cost_b:
        return -1 if cost_a < cost_b else 1
    return -_seconds_between(_created(a), _created(b))


def claim_deletion_order(a: tuple[Obj, Obj | None], b: tuple[Obj, Obj | None]) -> int:
    """claimDeletionOrder (controller.go:291-310) over (claim, pod) pairs: claims without a pod
    first, then by phase (Pending/"" < Lost < Outdated < Bound), then by pod deletion order,
    or for two pod-less claims the newer claim first.
    """
    (claim_a, pod_a), (claim_b, pod_b) = a, b
    has_a, has_b = int(pod_a is not None), int(pod_b is not None)
    if has_a != has_b:
        return has_a - has_b
    phase_a = _CLAIM_PHASE_ORDER.get(claim_a.get("status", {}).get("phase", ""), 0)
    phase_b = _CLAIM_PHASE_ORDER.get(claim_b.get("status", {}).get("phase", ""), 0)
    if phase_a != phase_b:
        return phase_a - phase_b
    if pod_a is not None and pod_b is not None:
        return pod_deletion_order(pod_a, pod_b)
    return -_seconds_between(_created(claim_a), _created(claim_b))


def scale_in_order(pairs: list[tuple[Obj, Obj | None]]) -> list[tuple[Obj, Obj | None]]:
    """The scale-in candidates, first to delete first (Go's sort is unstable; this keeps
    the input order on ties).
    """
    return sorted(pairs, key=cmp_to_key(claim_deletion_order))


class ClaimSetActor:
    """Observe/Finalize of CNClaimSets.

    The only real scale-in is ``updated + outdated > replicas``; the ``pr592`` and ``fixed``
    profiles leave migrating claims out of its candidates (PR #592 Fix 2).
    """

    def __init__(self, *, profile: Profile, timing: Timing) -> None:
        self.profile = profile
        self.timing = timing

    def observe(self, ctx: Context) -> None:
        """Observe always syncs inline (controller.go:75-77)."""
        self.sync(ctx)

    def sync(self, ctx: Context) -> None:
        """Sync (controller.go:79-127)."""
        s = ctx.obj
        selector = s.get("spec", {}).get("selector")
        owned, lost = split_claims(ctx.client.list(CLAIMS), selector)
        status = s.setdefault("status", {})
        if len(owned) != status.get("replicas", 0):
            try:
                real = ctx.client.list_direct(CLAIMS)
            except ApiError as err:
                raise wrap(err, "error list claims directly") from err
            real_owned, real_lost = split_claims(real, selector)
            if len(owned) != len(real_owned) or len(lost) != len(real_lost):
                ctx.log.info(
                    "cache not synced, wait",
                    caller=f"{SRC}:93",
                    **{
                        "cached owned": len(owned),
                        "real owned": len(real_owned),
                        "cached lost": len(lost),
                        "real lost": len(real_lost),
                    },
                )
                raise ReSync("wait cache sync", self.timing.claimset_cache_wait)
        try:
            owned = self._scale(ctx, owned, lost)
        except Exception as err:
            raise wrap(err, "error scale cnclaimset") from err
        for c in lost:
            if deleting(c):
                continue
            try:
                ctx.client.delete(CLAIMS, c)
            except NotFound:
                pass
            except ApiError as err:
                raise wrap(wrap(err, "error delete lost Claim"), "clean filter out claims") from err
        status = s.setdefault("status", {})
        status["replicas"] = len(owned)
        status["readyReplicas"] = sum(
            1 for c in owned if c.get("status", {}).get("phase") in ("Bound", "Outdated")
        )
        claims = [c.get("status", {}) for c in owned]
        if claims:
            status["claims"] = claims
        else:
            status.pop("claims", None)
        status["labelSelector"] = f"{CLAIMSET}={name_of(s)},pool.matrixorigin.io/phase=Bound"

    def _scale(self, ctx: Context, owned: list[Obj], lost: list[Obj]) -> list[Obj]:
        """scale (controller.go:129-162); returns the owned claims left."""
        s = ctx.obj
        phases = [c.get("status", {}).get("phase") for c in owned]
        updated = phases.count("Bound")
        outdated = phases.count("Outdated")
        desired = int(s.get("spec", {}).get("replicas", 0))
        ctx.log.info(
            "scale claimset",
            caller=f"{SRC}:143",
            desiredReplicas=desired,
            updatedReplicas=updated,
            outdatedReplicas=outdated,
        )
        if updated + outdated > desired:
            return self._scale_in(ctx, owned, len(owned) - desired)
        if updated + outdated >= desired and updated < desired:
            desired += 1
        if desired > len(owned):
            self._scale_out(ctx, owned, lost, desired - len(owned))
        return owned

    def _scale_out(self, ctx: Context, owned: list[Obj], lost: list[Obj], count: int) -> None:
        """scaleOut + makeClaim (controller.go:164-202): new claims ``<set>-<5 chars>``."""
        s = ctx.obj
        used = {labels_of(c).get(INSTANCE_ID, "") for c in owned + lost}
        template = s["spec"].get("template") or {}
        tpl_meta = template.get("metadata") or {}
        if tpl_meta.get("labels") is None:
            raise OperatorError(
                "assignment to entry in nil map (template.metadata.labels is required)"
            )
        for _ in range(count):
            instance = rand_string(ID_LENGTH)
            while instance in used:
                instance = rand_string(ID_LENGTH)
            used.add(instance)
            labels = {**tpl_meta["labels"], CLAIMSET: name_of(s), INSTANCE_ID: instance}
            spec = dict(template.get("spec") or {})
            spec.setdefault("ownerName", name_of(s))
            claim: Obj = {
                "apiVersion": CLAIMS.api_version,
                "kind": CLAIMS.kind,
                "metadata": {"name": f"{name_of(s)}-{instance}", "labels": labels},
                "spec": spec,
            }
            if tpl_meta.get("annotations"):
                claim["metadata"]["annotations"] = dict(tpl_meta["annotations"])
            try:
                ctx.client.create_owned(CLAIMS, claim, owner=s, owner_kind=CLAIMSETS)
            except ApiError as err:
                raise wrap(err, "error create new Claim") from err
            owned.append(claim)

    def _scale_in(self, ctx: Context, owned: list[Obj], count: int) -> list[Obj]:
        """scaleIn (controller.go:216-251; caee443:216-258 with migrating claims left out)."""
        pairs: list[tuple[Obj, Obj | None]] = []
        migrating = []
        for c in owned:
            if (
                self.profile.scalein_skips_migrating
                and c.get("spec", {}).get("sourcePod") is not None
            ):
                migrating.append(c)
                continue
            pairs.append((c, self._claimed_pod(ctx, c)))
        if migrating:
            ctx.log.info(
                "skip migrating claims from scale-in", caller=f"{SRC}:235", count=len(migrating)
            )
        if count >= len(pairs):
            count = len(pairs)
        else:
            pairs = scale_in_order(pairs)
            ctx.log.info(
                "sort claims to scale-in",
                caller=f"{SRC}:234",
                sorted=[{"Claim": c, "Pod": p} for c, p in pairs],
            )
        for claim, _ in pairs[:count]:
            try:
                ctx.client.delete(CLAIMS, claim)
            except NotFound:
                pass
            except ApiError as err:
                raise wrap(err) from err
        return [c for c, _ in pairs[count:]] + migrating

    def _claimed_pod(self, ctx: Context, claim: Obj) -> Obj | None:
        """getClaimedPod (controller.go:272-285)."""
        pod_name = claim.get("spec", {}).get("podName", "")
        if not pod_name or claim.get("status", {}).get("phase") == "Lost":
            return None
        try:
            return ctx.client.get(PODS, pod_name)
        except NotFound:
            return None

    def finalize(self, ctx: Context) -> bool:
        """Finalize (controller.go:253-270): delete every owned and lost claim, then wait."""
        owned, lost = split_claims(ctx.client.list(CLAIMS), ctx.obj.get("spec", {}).get("selector"))
        if not owned and not lost:
            return True
        for c in owned + lost:
            try:
                ctx.client.delete(CLAIMS, c)
            except NotFound:
                pass
            except ApiError as err:
                raise wrap(err) from err
        return False
