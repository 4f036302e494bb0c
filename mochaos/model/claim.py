"""The CNClaim controller (``cn-claim-manager``): bind, sync, migrate, reclaim, finalize.

Modelled on cnclaim/controller.go and migrate.go at eb9b356 (identical at 2301e3b; the
``caller`` of each log line is the line it models), docs/operator-behaviour.md §4.
"""

from __future__ import annotations

from collections.abc import Callable

from mochaos.ctrl.informer import MODIFIED
from mochaos.ctrl.objects import CLAIMED_BY_LABEL as CLAIMED_BY
from mochaos.ctrl.objects import CLAIMSET_LABEL as CLAIMSET
from mochaos.ctrl.objects import DIRECT_POD_LABEL as DIRECT_POD
from mochaos.ctrl.objects import KRUISE_STATE_LABEL as KRUISE_STATE
from mochaos.ctrl.objects import LAST_OWNER_LABEL as LAST_OWNER
from mochaos.ctrl.objects import OUTDATED_LABEL as OUTDATED
from mochaos.ctrl.objects import OWNER_LABEL as OWNER
from mochaos.ctrl.objects import PHASE_LABEL as PHASE
from mochaos.ctrl.objects import POOL_NAME_LABEL as POOL_NAME
from mochaos.ctrl.objects import RECLAIMED_AT_ANNOTATION as RECLAIMED_AT
from mochaos.ctrl.rest import CLAIMS, PODS, POOLS, ApiError, Conflict, NotFound, Obj
from mochaos.model.dict_helpers import (
    deleting,
    labels_of,
    mutable_annotations,
    mutable_labels,
    name_of,
    selector_matches,
)
from mochaos.model.hakeeper import DRAINING, WORKING, HAKeeper, Store, read_score
from mochaos.model.matrixone_faults import Unreachable
from mochaos.model.profiles import Profile
from mochaos.model.runtime.context import Context, OperatorError, ReSync, wrap
from mochaos.model.timing import Timing, parse_time, since

NAME = "cn-claim-manager"


PENDING, BOUND, LOST = "Pending", "Bound", "Lost"

SRC = "cnclaim/controller.go"
MIGRATE = "cnclaim/migrate.go"


def priority_order(claim: Obj, pods: list[Obj]) -> list[Obj]:
    """selectCN's pod order (§4.2 step 3, controller.go:502-525): pods last owned by the
    claim's owner first, then by the seconds-within-the-minute of their creation time.
    Go's sort is unstable; this one keeps the input order on ties.
    """
    owner = claim.get("spec", {}).get("ownerName")

    def key(pod: Obj) -> tuple[int, int]:
        previously = 0 if owner is not None and labels_of(pod).get(LAST_OWNER) == owner else 1
        created = pod["metadata"].get("creationTimestamp", "1970-01-01T00:00:00Z")
        return previously, int(parse_time(created)) % 60

    return sorted(pods, key=key)


def pod_claim_index(claims: list[Obj], exclude: str) -> dict[str, str]:
    """buildPodClaimIndex (controller.go:396-410): podName → claim over the other live claims
    with a podName; Lost claims count; the last claim listed wins a shared pod.
    """
    index: dict[str, str] = {}
    for c in claims:
        pod = c.get("spec", {}).get("podName", "")
        if name_of(c) == exclude or deleting(c) or not pod:
            continue
        index[pod] = name_of(c)
    return index


def claims_for_pod(
    event: str, old: Obj | None, new: Obj | None, *, claims: Callable[[], list[Obj]] | None
) -> list[str]:
    """The pod → claim mapping of the claim controller's Pod watch (§4.8, controller.go:460-477).

    Update events pass only when the pod's status changed (PodStatusChangedPredicate); the
    claim is the one the pod's ``claimed-by`` label names, read from the event's objects
    (old and new on update, the last known state on delete). With ``claims`` (PR #592
    Fix 4) every claim whose ``spec.podName`` names the pod is enqueued too.
    """
    if (
        event == MODIFIED
        and old is not None
        and new is not None
        and old.get("status") == new.get("status")
    ):
        return []
    names: list[str] = []
    for pod in (p for p in (old, new) if p is not None):
        holder = labels_of(pod).get(CLAIMED_BY)
        if holder is not None and holder not in names:
            names.append(holder)
        if claims is not None:
            for c in claims():
                if c.get("spec", {}).get("podName") == name_of(pod) and name_of(c) not in names:
                    names.append(name_of(c))
    return names


class ClaimActor:
    """Observe/Finalize of CNClaims, with the profile switches of profiles.py.

    Quirks kept on purpose: the store's pod name is written under ``status.store.string``
    (Q5), the pod priority uses the seconds-of-minute of the creation time (Q3), Lost is
    sticky, and a non-NotFound read error in Sync (Q1, a nil-map panic in Go) or of the
    migration source (Q2) is an error here, logged at error level and backed off.
    """

    def __init__(self, *, profile: Profile, timing: Timing, hakeeper: HAKeeper) -> None:
        self.profile = profile
        self.timing = timing
        self.hakeeper = hakeeper

    # ------------------------------------------------------------------ dispatch (§4)

    def observe(self, ctx: Context) -> Callable[[Context], None] | None:
        """Bind when no pod is named, else Sync inline (controller.go:62-67)."""
        if not ctx.obj.get("spec", {}).get("podName"):
            return self.bind
        self.sync(ctx)
        return None

    # ------------------------------------------------------------------ bind (§4.1-§4.4)

    def bind(self, ctx: Context) -> None:
        """Bind (controller.go:69-120): orphans, then an idle pod, else nominate a pool."""
        c = ctx.obj
        c.setdefault("status", {})["phase"] = PENDING
        ctx.log.info("start bind cn claim", caller=f"{SRC}:72")
        orphans = ctx.client.list(PODS, labels={PHASE: BOUND, CLAIMED_BY: name_of(c)})
        try:
            claimed = self._claim_cn(ctx, orphans)
        except Exception as err:
            raise wrap(err, "error claim idle CN") from err
        spec = c.setdefault("spec", {})
        if claimed is None and not spec.get("poolName"):
            ctx.log.info("no idle CN available, try to find a matching pool", caller=f"{SRC}:91")
            pools = ctx.client.list(POOLS)
            pool = next(
                (
                    p
                    for p in pools
                    if selector_matches(
                        spec.get("selector"), p.get("spec", {}).get("podLabels") or {}
                    )
                ),
                None,
            )
            if pool is None:
                raise ReSync("cannot find matching pool, requeue", self.timing.retry_bind)
            spec["poolName"] = name_of(pool)
            mutable_labels(c)[POOL_NAME] = name_of(pool)
            try:
                ctx.client.update(CLAIMS, c)
            except ApiError as err:
                raise wrap(err, "error bind claim to pool") from err
        raise ReSync("wait pod to bound", self.timing.retry_bind)

    def _claim_cn(self, ctx: Context, orphans: list[Obj]) -> Obj | None:
        try:
            pod = self._select_cn(ctx, orphans)
        except Exception as err:
            raise wrap(err, "error claim CN") from err
        if pod is None:
            return None
        self._sync_bind_pod(ctx, pod)
        return pod

    def _select_cn(self, ctx: Context, orphans: list[Obj]) -> Obj | None:
        """selectCN (§4.2, controller.go:137-186; without the index before #587)."""
        c = ctx.obj
        if orphans:
            if len(orphans) > 1:
                ctx.log.info(
                    "multiple orphan CN bound to 1 claim",
                    caller=f"{SRC}:143",
                    count=len(orphans),
                    claimName=name_of(c),
                )
            return orphans[0]
        spec = c.get("spec", {})
        pool = spec.get("poolName", "")

        def idle(pod: Obj) -> bool:
            lbl = labels_of(pod)
            return (
                selector_matches(spec.get("selector"), lbl)
                and lbl.get(PHASE) == "Idle"
                and (not pool or lbl.get(POOL_NAME) == pool)
                and OUTDATED not in lbl
            )

        candidates = priority_order(c, ctx.client.list(PODS, where=idle))
        index: dict[str, str] = {}
        if self.profile.claim_index:
            index = pod_claim_index(ctx.client.list(CLAIMS), exclude=name_of(c))
        for pod in candidates:
            holder = index.get(name_of(pod))
            if holder is not None:
                ctx.log.info(
                    "skip pod claimed by other CNClaim",
                    caller=f"{SRC}:171",
                    podName=name_of(pod),
                    holder=holder,
                )
                continue
            try:
                self._ensure_ownership(ctx, pod)
            except Conflict:
                ctx.log.info(
                    "CN pod is not up to date, try next", caller=f"{SRC}:176", podName=name_of(pod)
                )
                continue
            except ApiError as err:
                raise wrap(err, "error claim Pod") from err
            ctx.log.info("CN bind success", caller=f"{SRC}:181", **{"claimed CN": pod})
            return pod
        return None

    def _ensure_ownership(self, ctx: Context, pod: Obj) -> None:
        """ensureOwnership (§4.3, controller.go:188-210): one full, optimistic pod update;
        no check of who holds the pod.
        """
        c = ctx.obj
        spec = c.get("spec", {})
        lbl = mutable_labels(pod)
        lbl.update(spec.get("additionalPodLabels") or {})
        lbl[PHASE] = BOUND
        lbl[CLAIMED_BY] = name_of(c)
        claimset = labels_of(c).get(CLAIMSET, "")
        if claimset:
            lbl[CLAIMSET] = claimset
        if spec.get("ownerName") is not None:
            lbl[OWNER] = spec["ownerName"]
        ctx.client.update(PODS, pod)

    def _sync_bind_pod(self, ctx: Context, pod: Obj) -> None:
        """syncBindPod (§4.4, controller.go:212-257)."""
        if DIRECT_POD not in labels_of(pod) and labels_of(pod).get(KRUISE_STATE) != "Normal":
            raise ReSync("pod is not in normal state, wait", self.timing.retry_patch)
        c = ctx.obj
        cn_labels = {
            item["key"]: list(item.get("values") or [])
            for item in c.get("spec", {}).get("cnLabels") or []
        }
        store = self.hakeeper.patch_store(pod, state=WORKING, labels=cn_labels)

        def set_pod() -> None:
            spec = c.setdefault("spec", {})
            spec["podName"] = name_of(pod)
            spec["nodeName"] = pod.get("spec", {}).get("nodeName", "")
            spec["poolName"] = labels_of(pod).get(POOL_NAME, "")
            mutable_labels(c)[POOL_NAME] = spec["poolName"]
            for key in ("nodeName", "poolName"):
                if not spec[key]:
                    del spec[key]

        try:
            ctx.client.patch(CLAIMS, c, set_pod)
        except ApiError as err:
            raise wrap(err, "error update claim spec") from err
        status = c.setdefault("status", {})
        if not status.get("boundTime"):
            status["boundTime"] = self.timing.stamp()
        if status.get("phase", "") in ("", PENDING):
            status["phase"] = BOUND
        old_store = status.get("store") or {}
        new_store = _store_status(store, pod)
        if old_store.get("string") != name_of(pod):
            new_store["boundTime"] = self.timing.stamp()
        elif old_store.get("boundTime"):
            new_store["boundTime"] = old_store["boundTime"]
        status["store"] = new_store
        try:
            ctx.client.update_status(CLAIMS, c)
        except ApiError as err:
            raise wrap(err, "error update claim status") from err

    # ------------------------------------------------------------------ sync (§4.5)

    def sync(self, ctx: Context) -> None:
        """Sync (controller.go:259-290): keep the named pod owned and working, migrate."""
        c = ctx.obj
        status = c.setdefault("status", {})
        try:
            pod = ctx.client.get(PODS, c["spec"]["podName"])
        except NotFound:
            bound = status.get("boundTime")
            if bound and since(bound) < self.timing.wait_cache_timeout:
                raise ReSync(
                    "pod status may be not update to date, wait", self.timing.wait_cache_timeout
                ) from None
            status["phase"] = LOST
            if self.profile.lost_clears_podname:
                self._clear_lost_spec(ctx)
            return
        except Exception as err:
            raise OperatorError(
                f"assignment to entry in nil map (quirk Q1: pod read failed: {err})"
            ) from err
        if pod.get("status", {}).get("phase") in ("Succeeded", "Unknown"):
            status["phase"] = LOST
            return
        try:
            self._ensure_ownership(ctx, pod)
        except ApiError as err:
            raise wrap(err) from err
        try:
            self._sync_bind_pod(ctx, pod)
        except Exception as err:
            ctx.log.info("error keep bound CN working", caller=f"{SRC}:280", error=str(err))
            raise ReSync("error keep bound CN working", self.timing.retry_patch) from err
        if c.get("spec", {}).get("sourcePod") is not None:
            self._migrate(ctx)

    def _clear_lost_spec(self, ctx: Context) -> None:
        """PR #592 Fix 3: clear spec.podName/nodeName of a Lost claim. The patch answer
        overwrites the in-memory Lost phase, so Lost is not persisted
        (docs/operator-behaviour.md §10.1).
        """
        spec = ctx.obj.setdefault("spec", {})

        def clear() -> None:
            spec.pop("podName", None)
            spec.pop("nodeName", None)
            if self.profile.lost_ends_migration:
                spec.pop("sourcePod", None)

        try:
            ctx.client.patch(CLAIMS, ctx.obj, clear)
        except ApiError as err:
            raise wrap(err, "error clearing lost claim spec") from err

    # ------------------------------------------------------------------ migration (§4.6)

    def _migrate(self, ctx: Context) -> None:
        """migrate (migrate.go:35-75): after the propagation delay drain the source; done
        when the source is Idle, Terminating or gone.
        """
        c = ctx.obj
        spec = c["spec"]
        source_name = spec["sourcePod"].get("podName", "")
        ctx.log.info(
            "migrate claimed pod",
            caller=f"{MIGRATE}:41",
            source=source_name,
            target=spec["podName"],
        )
        try:
            source = ctx.client.get(PODS, source_name)
        except NotFound:
            self._complete_migration(ctx)
            return
        except Exception:
            source = {"metadata": {}}
        store = c.get("status", {}).get("store") or {}
        if not store.get("boundTime"):
            raise OperatorError(
                f"claim store {c['metadata']['namespace']}/{name_of(c)} bound time is nil"
            )
        if since(store["boundTime"]) < self.timing.propagation_delay:
            raise ReSync(
                "target pod is not ready to accept traffic, delay", self.timing.propagation_delay
            )
        phase = labels_of(source).get(PHASE, "")
        if phase == "Draining":
            self._report_progress(ctx, source)
            raise ReSync("source pod is still draining, requeue", self.timing.migration_resync)
        if phase == BOUND:
            ctx.log.info("start draining source pod", caller=f"{MIGRATE}:62", pod=name_of(source))
            self.reclaim(ctx, source)
            self._report_progress(ctx, source)
            raise ReSync("source pod start draining, requeue", self.timing.migration_resync)
        if phase in ("Terminating", "Idle"):
            self._complete_migration(ctx)
            return
        raise OperatorError(f"unknown pod phase: {phase}")

    def _report_progress(self, ctx: Context, source: Obj) -> None:
        """reportProgress (migrate.go:77-96): the source's workload into status.migrate."""
        try:
            score = read_score(source)
        except Exception as err:
            raise wrap(err) from err
        c = ctx.obj

        def set_progress() -> None:
            workload = {
                "connections": score.sessions,
                "pipelines": score.pipelines,
                "replicas": score.replicas,
            }
            c.setdefault("status", {})["migrate"] = {
                "source": {k: v for k, v in workload.items() if v}
            }

        ctx.client.patch_status(CLAIMS, c, set_progress)

    def _complete_migration(self, ctx: Context) -> None:
        """completeMigration (migrate.go:98-109): status.migrate cleared, then spec.sourcePod."""
        c = ctx.obj
        c.setdefault("status", {}).pop("migrate", None)
        try:
            ctx.client.update_status(CLAIMS, c)
            c.setdefault("spec", {}).pop("sourcePod", None)
            ctx.client.update(CLAIMS, c)
        except ApiError as err:
            raise wrap(err) from err

    # ------------------------------------------------------------------ reclaim (§4.7)

    def reclaim(self, ctx: Context, pod: Obj) -> None:
        """reclaimCN (controller.go:301-338): store Draining, pod Draining without claimed-by.
        HAKeeper unreachable is an error: the pod keeps its phase and label until a retry
        gets through (only "does not exist" is skipped, and the model's HAKeeper never
        answers that)."""
        try:
            self.hakeeper.patch_store(pod, state=DRAINING, labels=None)
        except Unreachable as err:
            raise wrap(err) from err
        extra = ctx.obj.get("spec", {}).get("additionalPodLabels") or {}

        def to_draining() -> None:
            lbl = mutable_labels(pod)
            lbl[PHASE] = "Draining"
            lbl.pop(CLAIMED_BY, None)
            if OWNER in lbl:
                lbl[LAST_OWNER] = lbl.pop(OWNER)
            for key in extra:
                lbl.pop(key, None)
            mutable_annotations(pod)[RECLAIMED_AT] = self.timing.stamp()

        try:
            ctx.client.patch(PODS, pod, to_draining)
        except ApiError as err:
            raise wrap(err) from err

    # ------------------------------------------------------------------ finalize (§4.8)

    def finalize(self, ctx: Context) -> bool:
        """Finalize (controller.go:340-371 at eb9b356; PR #592 variants by profile)."""
        ctx.log.info("finalize CNClaim", caller=f"{SRC}:341")
        me = name_of(ctx.obj)
        owned = ctx.client.list(PODS, labels={PHASE: BOUND, CLAIMED_BY: me})
        if self.profile.finalize_own_spec_pod:
            owned += self._own_unlabelled_pod(ctx, owned)
        if not owned:
            return True
        index: dict[str, str] = {}
        if self.profile.claim_index:
            index = pod_claim_index(ctx.client.list(CLAIMS), exclude=me)
        for pod in owned:
            holder = index.get(name_of(pod))
            if holder is None:
                ctx.log.info(
                    "finalize CNClaim, reclaim bound CN", caller=f"{SRC}:365", cn=name_of(pod)
                )
                self.reclaim(ctx, pod)
            elif self.profile.relabel_for_holder:
                self._hand_over(ctx, pod, holder)
            elif self.profile.finalize_releases_label:
                self._release_label(ctx, pod, holder)
            else:
                ctx.log.info(
                    "skip reclaim, pod still claimed by other CNClaim",
                    caller=f"{SRC}:362",
                    pod=name_of(pod),
                    holder=holder,
                )
        return self.profile.finalize_releases_label

    def _own_unlabelled_pod(self, ctx: Context, owned: list[Obj]) -> list[Obj]:
        """The ``fixed`` profile: the pod my spec names is mine to reclaim when no other live
        claim's label holds it — e.g. a pod just handed over to me whose new label this
        (stale) cache has not seen yet. A stale copy makes the reclaim patch conflict, and
        the retry sees the fresh label."""
        me, pod_name = name_of(ctx.obj), (ctx.obj.get("spec") or {}).get("podName")
        if not pod_name or any(name_of(p) == pod_name for p in owned):
            return []
        try:
            pod = ctx.client.get(PODS, pod_name)
        except NotFound:
            return []
        labels = pod["metadata"].get("labels") or {}
        holder = labels.get(CLAIMED_BY)
        if labels.get(PHASE) != BOUND or holder == me:
            return []
        try:
            holder_claim = ctx.client.get(CLAIMS, holder) if holder else None
        except NotFound:
            holder_claim = None
        return [] if holder_claim is not None and not deleting(holder_claim) else [pod]

    def _release_label(self, ctx: Context, pod: Obj, holder: str) -> None:
        """PR #592 Fix 1: drop ``claimed-by`` of a pod another claim references."""
        ctx.log.info(
            "release pod label, pod claimed by other CNClaim",
            caller=f"{SRC}:370",
            pod=name_of(pod),
            holder=holder,
        )
        try:
            ctx.client.patch(PODS, pod, lambda: mutable_labels(pod).pop(CLAIMED_BY, None))
        except ApiError as err:
            raise wrap(err, "error releasing pod label") from err

    def _hand_over(self, ctx: Context, pod: Obj, holder: str) -> None:
        """The ``fixed`` profile: label the pod for the claim that references it."""
        ctx.log.info(
            "hand pod over to the CNClaim that references it",
            caller="mochaos/fixed",
            pod=name_of(pod),
            holder=holder,
        )
        try:
            ctx.client.patch(PODS, pod, lambda: mutable_labels(pod).__setitem__(CLAIMED_BY, holder))
        except ApiError as err:
            raise wrap(err, "error handing pod over") from err


def _store_status(store: Store, pod: Obj) -> Obj:
    """toStoreStatus (controller.go:479-500); the pod name goes under ``string`` (Q5)."""
    out: Obj = {
        "serviceID": store.uuid,
        "lockServiceAddress": f"{store.address}:6003",
        "pipelineServiceAddress": f"{store.address}:6005",
        "sqlAddress": f"{store.address}:6001",
        "queryAddress": f"{store.address}:6006",
        "workState": store.work_state,
        "string": name_of(pod),
    }
    labels = [{"key": k, "values": store.labels[k]} for k in sorted(store.labels)]
    if labels:
        out["labels"] = labels
    return out
