"""The incident timeline: a History turned into the table a bug report would show.

Object changes become semantic events by diffing successive versions of each
object; operator log lines keep their key fields (what a line means is the log
vocabulary's); repeated retry lines of one object collapse into one row, finalize
retries counted as everywhere else; our own writes appear once, as the action row;
the first violation of each failed invariant gets a row of its own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mochaos.ctrl.objects import CLAIMED_BY_LABEL, CLAIMSET_LABEL, PHASE_LABEL, deleting, labels_of
from mochaos.faults import RESTORE_MATRIXONE, of_action
from mochaos.invariants.verdict import Verdict
from mochaos.observe import vocabulary
from mochaos.observe.churn import Churned, churned_pods
from mochaos.observe.history import (
    MATRIXONE_FAULT,
    ActionRecord,
    Change,
    History,
    LogRecord,
    PeriodEdge,
)
from mochaos.observe.vocabulary import LogKind, classify, error_text, finalize_retries

SHORT_KIND = {"CNClaim": "claim", "CNClaimSet": "claimset", "Pod": "pod", "CNPool": "pool"}
_CANONICAL_KIND = {k.lower(): k for k in SHORT_KIND} | {v: k for k, v in SHORT_KIND.items()}
TRACKED_KINDS = ("CNClaim", "CNClaimSet", "Pod")
_KIND_OF_RESOURCE = {"pods": "Pod", "cnclaims": "CNClaim", "cnclaimsets": "CNClaimSet",
                     "cnpools": "CNPool"}  # fmt: skip

MARKER_TEXT = {
    "scenario": "scenario starts",
    "epilogue": "epilogue: all claim sets scaled to 0",
    "settled": "settled: final checks",
}

_FINALIZE_KINDS = frozenset(
    {LogKind.FINALIZE_ATTEMPT, LogKind.FINALIZE_UNFINISHED, LogKind.FINALIZE_SKIP}
)
_CLAIMSET_KINDS = frozenset({LogKind.SCALE_IN_SORT, LogKind.SCALE_IN_SKIP})
_ERROR_KINDS = frozenset(
    {LogKind.ERROR, LogKind.CONFLICT, LogKind.UNREACHABLE, LogKind.KEEP_BOUND_ERROR}
)
_CONTROLLER_KINDS = {
    "cn-claim-manager": "CNClaim",
    "cn-claimset-manager": "CNClaimSet",
    "cn-pool-manager": "CNPool",
    "cnstore": "Pod",
}
"""The reconciled kind of each operator controller (the ``controller`` log key)."""


@dataclass(frozen=True, slots=True)
class TimelineRow:
    """One row of the incident table.

    ``offset`` is seconds from the history start; condensed rows also carry the
    offset of their last line (``end_offset``) and how many lines they stand for.
    ``action`` marks a mo-chaos action (chaos fault or agent emulation),
    ``violation`` the first violation of a failed invariant.
    """

    t: float
    offset: float
    component: str
    object: str
    event: str
    action: bool = False
    violation: bool = False
    seq: int = 0
    end_offset: float | None = None
    count: int = 1


def object_ref(kind: str, name: str) -> str:
    """``claim/X`` for (CNClaim, X); unknown kinds keep their own name."""
    kind = _CANONICAL_KIND.get(kind.lower(), kind) if kind else ""
    short = SHORT_KIND.get(kind, kind.lower())
    return f"{short}/{name}" if short else name


def normalise_ref(ref: str) -> str:
    """Map ``CNClaim/X`` or ``cnclaim/X`` to ``claim/X``; other strings are kept."""
    kind, sep, name = ref.partition("/")
    return object_ref(kind, name) if sep and kind.lower() in _CANONICAL_KIND else ref


def _get(obj: dict[str, Any] | None, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _span(first: float, last: float) -> str:
    return f"{first:.1f}–{last:.1f} s"


def _times(n: int) -> str:
    return f"{n} time" if n == 1 else f"{n} times"


# --------------------------------------------------------------------------
# Object changes -> semantic events
# --------------------------------------------------------------------------


def _claim_events(prev: dict[str, Any], cur: dict[str, Any]) -> list[str]:
    parts: list[str] = []
    old_pod, new_pod = _get(prev, "spec", "podName") or "", _get(cur, "spec", "podName") or ""
    old_src = _get(prev, "spec", "sourcePod", "podName") or ""
    new_src = _get(cur, "spec", "sourcePod", "podName") or ""
    migration_requested = bool(new_src) and new_src != old_src
    if migration_requested:
        parts.append(f"migration requested: pod/{new_src} → pod/{new_pod}")
    elif old_src and not new_src:
        parts.append(f"migration completed on pod/{new_pod}" if new_pod else "migration cleared")
    if old_pod != new_pod and not migration_requested:
        if not old_pod:
            parts.append(f"bound to pod/{new_pod}")
        elif not new_pod:
            parts.append(f"podName cleared (was pod/{old_pod})")
        else:
            parts.append(f"podName pod/{old_pod} → pod/{new_pod}")
    old_phase, new_phase = _get(prev, "status", "phase") or "", _get(cur, "status", "phase") or ""
    if old_phase != new_phase and new_phase:
        parts.append(f"phase {old_phase} → {new_phase}" if old_phase else f"phase {new_phase}")
    old_store = _get(prev, "status", "store", "string") or ""
    new_store = _get(cur, "status", "store", "string") or ""
    if old_store and new_store and old_store != new_store:
        parts.append(f"store moved to pod/{new_store}")
    return parts


def _pod_events(prev: dict[str, Any], cur: dict[str, Any]) -> list[str]:
    parts: list[str] = []
    old_phase, new_phase = _get(prev, "status", "phase") or "", _get(cur, "status", "phase") or ""
    if old_phase != new_phase and new_phase:
        parts.append(new_phase if new_phase == "Running" else f"pod phase {new_phase}")
    old_labels, new_labels = labels_of(prev), labels_of(cur)
    old_pl, new_pl = old_labels.get(PHASE_LABEL, ""), new_labels.get(PHASE_LABEL, "")
    if old_pl != new_pl:
        if old_pl and new_pl:
            parts.append(f"phase label {old_pl} → {new_pl}")
        else:
            parts.append(f"phase label {new_pl}" if new_pl else f"phase label {old_pl} removed")
    old_cb, new_cb = old_labels.get(CLAIMED_BY_LABEL, ""), new_labels.get(CLAIMED_BY_LABEL, "")
    if old_cb != new_cb:
        if old_cb and new_cb:
            parts.append(f"claimed-by {old_cb} → {new_cb}")
        else:
            parts.append(f"claimed-by={new_cb}" if new_cb else f"claimed-by {old_cb} removed")
    return parts


def _claimset_events(prev: dict[str, Any], cur: dict[str, Any]) -> list[str]:
    old, new = _get(prev, "spec", "replicas"), _get(cur, "spec", "replicas")
    if old != new and new is not None and prev:
        return [f"replicas {old} → {new}"]
    return []


_DIFFERS = {"CNClaim": _claim_events, "Pod": _pod_events, "CNClaimSet": _claimset_events}


def _created_text(change: Change, start: float) -> str:
    obj = change.obj
    if change.kind == "CNClaim":
        claimset = labels_of(obj).get(CLAIMSET_LABEL)
        return f"claim created (set {claimset})" if claimset else "claim created"
    if change.kind == "CNClaimSet":
        return f"claimset created (replicas {_get(obj, 'spec', 'replicas')})"
    created = _get(obj, "metadata", "creationTimestamp")
    verb = "created"
    if isinstance(created, str):
        try:
            born = datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
        except ValueError:
            born = start
        verb = "present" if born < start - 1.0 else "created"
    return f"pod {verb}"


def change_events(prev: dict[str, Any] | None, change: Change, start: float) -> list[str]:
    """The semantic events of one watch event, given the previous version (None if new)."""
    if change.event == "DELETED":
        return ["gone"]
    differ = _DIFFERS.get(change.kind)
    if differ is None:
        return []
    parts = [_created_text(change, start)] if prev is None else []
    base = prev or {}
    if deleting(change.obj) and not deleting(base):
        parts.append("deletion requested")
    if prev is None and change.kind == "CNClaimSet":
        return parts
    return parts + differ(base, change.obj)


# --------------------------------------------------------------------------
# Our own writes
# --------------------------------------------------------------------------


def _caused_by(action: ActionRecord, prev: dict[str, Any] | None, change: Change) -> bool:
    """True when ``change`` is the effect of ``action`` (same rv, and the write changed it).

    A write that changed nothing gets back the object's current resourceVersion,
    which belongs to someone else's change; checking the expected effect keeps
    that change visible. A fault's effect is its kind's (mochaos.faults).
    """
    kind = _CANONICAL_KIND.get(action.kind.lower(), action.kind) if action.kind else ""
    if (kind and kind != change.kind) or (action.name and action.name != change.name):
        return False
    cur = change.obj
    fault = of_action(action.action, action.fault)
    if fault is not None and fault.effect is not None:
        return fault.effect(prev, None if change.event == "DELETED" else cur, action.params)
    if action.action == "request_migration":
        return any(
            _get(prev, "spec", key) != _get(cur, "spec", key) for key in ("podName", "sourcePod")
        )
    if action.action == "create":
        return prev is None
    return True


def _window_text(action: ActionRecord) -> str:
    if not action.trigger:
        return ""
    at = f" @rv {action.trigger_rv}" if action.trigger_rv is not None else ""
    window = {True: "in window", False: "MISSED window", None: "window not verified"}
    return f" [trigger {action.trigger}{at}, {window[action.in_window]}]"


def _action_text(action: ActionRecord, effect: tuple[dict[str, Any] | None, Change] | None) -> str:
    params = action.params
    prev = effect[0] if effect else None
    fault = of_action(action.action, action.fault)
    if fault is not None:
        text = fault.render({**fault.defaults, **params}, prev)
    elif action.action == "request_migration":
        text = f"request migration pod/{params.get('source')} → pod/{params.get('target')}"
    elif action.action == RESTORE_MATRIXONE:
        text = f"make MatrixOne's {params.get('component')} reachable again"
    elif action.action == "create":
        replicas = _get(effect[1].obj, "spec", "replicas") if effect else None
        text = "create" if replicas is None else f"create (replicas {replicas})"
    else:
        args = ", ".join(f"{k}={v}" for k, v in sorted(params.items()))
        text = f"{action.action}({args})"
    if action.error:
        text += f" FAILED: {action.error}"
    return text + _window_text(action)


def _action_object(action: ActionRecord) -> str:
    if action.action.endswith("_operator"):
        return "operator"
    return object_ref(action.kind, action.name) if action.name else "–"


# --------------------------------------------------------------------------
# Operator log lines
# --------------------------------------------------------------------------


def _pod_name(value: Any) -> str:
    """The pod name inside a log field that holds a name, a whole Pod (the model) or the
    object reference the real operator's zap encoder writes (``{"kind","name",…}``)."""
    if isinstance(value, dict):
        name = _get(value, "metadata", "name") or value.get("name")
    else:
        name = value
    return str(name) if name else "?"


def _sorted_claims(value: Any) -> list[str]:
    """Claim names, in order, from the ``sorted`` field of ``sort claims to scale-in``."""
    names: list[str] = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, str):
            names.append(item)
            continue
        claim = None
        if isinstance(item, dict):
            keys = [k for k in item if "claim" in k.lower()] or list(item)
            for key in keys:
                claim = _get(item[key], "metadata", "name") or (
                    item[key] if isinstance(item[key], str) else None
                )
                if claim:
                    break
        if claim:
            names.append(str(claim))
    return names


def _single_log_text(rec: LogRecord) -> str | None:
    """The row text of a log line shown as its own row (None: not shown)."""
    f = rec.fields
    match classify(rec):
        case LogKind.BIND:
            return vocabulary.START_BIND
        case LogKind.BIND_SUCCESS:
            return f"CN bind success: pod/{_pod_name(f.get('claimed CN'))}"
        case LogKind.DRAIN_SOURCE:
            return f"start draining source pod/{f.get('pod')}"
        case LogKind.SCALE_IN_SORT:
            order = _sorted_claims(f.get("sorted"))
            return vocabulary.SCALE_IN_SORT + (f": {', '.join(order)}" if order else "")
        case LogKind.SCALE_IN_SKIP:
            return f"scale-in skipped {f.get('count')} migrating claim(s)"
        case LogKind.FINALIZE_RECLAIM:
            return f"finalize: reclaim bound pod/{_pod_name(f.get('cn'))}"
        case LogKind.FINALIZE_RELEASE:
            return (
                f"finalize: release label of pod/{f.get('pod')} (held by claim/{f.get('holder')})"
            )
        case LogKind.FINALIZE_DONE:
            return "finalize complete, finalizer removed"
        case LogKind.ORPHANS:
            return f"{f.get('count')} orphan pods bound to this claim"
        case LogKind.DRAIN_TIMEOUT:
            return "drain timed out, pod evicted"
        case LogKind.FINALIZE_ATTEMPT:
            return vocabulary.FINALIZE_ATTEMPT
    return None


def _group_key(rec: LogRecord, obj: str) -> tuple[Any, ...] | None:
    """Lines with the same key collapse into one row when repeated."""
    f = rec.fields
    kind = classify(rec)
    if kind in _FINALIZE_KINDS:
        return (obj, "finalize")
    if kind is LogKind.MIGRATE:
        return (obj, "migrate", f.get("source"), f.get("target"))
    if kind is LogKind.BIND:
        return (obj, "bind")
    if kind is LogKind.BIND_SKIP:
        return (obj, "skip-pod", f.get("podName"), f.get("holder"))
    if kind in _ERROR_KINDS:
        return (obj, "error", error_text(rec))
    return None


def _group_text(key: tuple[Any, ...], lines: list[LogRecord], start: float) -> str:
    first, last, n = lines[0].t - start, lines[-1].t - start, len(lines)
    kind = key[1]
    if kind == "finalize":
        if n == 1:
            return _single_log_text(lines[0]) or lines[0].msg
        skips: dict[tuple[str, str], int] = defaultdict(int)
        for r in lines:
            if classify(r) is LogKind.FINALIZE_SKIP:
                skips[(str(r.fields.get("pod")), str(r.fields.get("holder")))] += 1
        detail = "".join(
            f"; skip reclaim pod/{pod} (held by claim/{holder}) ×{count}"
            for (pod, holder), count in skips.items()
        )
        retries = sum(finalize_retries(lines).values())
        if not retries:  # another kind's Finalize: only the runtime's requeue lines
            return f"finalize not complete, requeued ×{n}, {_span(first, last)}"
        return f"Finalize retried {_times(retries)}, {_span(first, last)}{detail}"
    if kind == "migrate":
        text = f"migrate claimed pod: pod/{key[2]} → pod/{key[3]}"
        return text if n == 1 else f"{text}, repeated {_times(n)}, {_span(first, last)}"
    if kind == "bind":
        return (
            vocabulary.START_BIND if n == 1 else f"bind attempted {_times(n)}, {_span(first, last)}"
        )
    if kind == "skip-pod":
        text = f"bind skipped pod/{key[2]} (held by claim/{key[3]})"
    else:
        text = f"error: {key[2]}"
    return text if n == 1 else f"{text} ×{n}, {_span(first, last)}"


# --------------------------------------------------------------------------
# Assembly
# --------------------------------------------------------------------------


@dataclass
class _Rows:
    """Rows under construction; sorted by time, then by the seq of their entry.

    Log lines carry the operator's own timestamp, watch events their receive time,
    so time order reads naturally; the seq breaks ties, and violation rows are
    added last, so at equal times a violation follows the entry that violated.
    """

    start: float
    rows: list[TimelineRow] = field(default_factory=list)

    def add(self, seq: int, t: float, component: str, obj: str, event: str, **kw: Any) -> None:
        self.rows.append(
            TimelineRow(
                t=t,
                offset=t - self.start,
                component=component,
                object=obj,
                event=event,
                seq=seq,
                **kw,
            )
        )

    def sorted(self) -> list[TimelineRow]:
        return sorted(self.rows, key=lambda row: (row.t, row.seq))


def _attribute_writes(
    history: History,
) -> tuple[dict[int, tuple[dict[str, Any] | None, Change]], set[int]]:
    """Match our writes to the changes they caused: action seq -> (prev, change)."""
    by_rv: dict[int, list[ActionRecord]] = defaultdict(list)
    for action in history.actions():
        if action.write_rv is not None:
            by_rv[action.write_rv].append(action)
    effects: dict[int, tuple[dict[str, Any] | None, Change]] = {}
    ours: set[int] = set()
    last: dict[tuple[str, str], dict[str, Any]] = {}
    for change in history.changes():
        key = (change.kind, change.name)
        prev = last.get(key)
        for action in by_rv.get(change.rv, ()):
            if action.seq not in effects and _caused_by(action, prev, change):
                effects[action.seq] = (prev, change)
                ours.add(change.seq)
                break
        if change.event == "DELETED":
            last.pop(key, None)
        else:
            last[key] = change.obj
    return effects, ours


def _change_rows(rows: _Rows, history: History, ours: set[int]) -> None:
    last: dict[tuple[str, str], dict[str, Any]] = {}
    for change in history.changes():
        key = (change.kind, change.name)
        prev = last.get(key)
        if change.event == "DELETED":
            last.pop(key, None)
        else:
            last[key] = change.obj
        if change.kind not in TRACKED_KINDS or change.seq in ours:
            continue
        events = change_events(prev, change, history.start)
        if events:
            ref = object_ref(change.kind, change.name)
            rows.add(change.seq, change.t, change.component, ref, "; ".join(events))


def _deletion_seqs(history: History) -> dict[tuple[str, str], int]:
    """(kind, name) -> seq of the first change that shows the object deleting or gone."""
    seqs: dict[tuple[str, str], int] = {}
    for change in history.changes():
        if change.event == "DELETED" or deleting(change.obj):
            seqs.setdefault((change.kind, change.name), change.seq)
    return seqs


def _retry_row(rows: _Rows, attempts: list[ActionRecord], start: float, *, deleting: bool) -> None:
    first, last = attempts[0].t - start, attempts[-1].t - start
    what = "kept retrying migration of the deleting claim" if deleting else "retried migration"
    text = f"agent {what} {_times(len(attempts))}, {_span(first, last)}"
    failed = [a for a in attempts if a.error]
    if failed:
        text += f" ({len(failed)} failed, last: {failed[-1].error})"
    rows.add(
        attempts[0].seq,
        attempts[0].t,
        attempts[0].component,
        _action_object(attempts[0]),
        text,
        end_offset=last,
        count=len(attempts),
    )


def _action_rows(rows: _Rows, history: History, effects: dict[int, Any]) -> None:
    """One row per action; the agent's repeated migration requests condensed.

    Retries are split at the claim's deletion: before it they are the agent
    waiting for a migration, after it they hammer a claim that is going away.
    """
    retries: dict[tuple[Any, ...], list[ActionRecord]] = defaultdict(list)
    for action in history.actions():
        if action.action == "request_migration":
            key = (
                action.kind,
                action.name,
                action.params.get("source"),
                action.params.get("target"),
            )
            retries[key].append(action)
            if len(retries[key]) > 1:
                continue
        text = _action_text(action, effects.get(action.seq))
        rows.add(action.seq, action.t, action.component, _action_object(action), text, action=True)
    deletions = _deletion_seqs(history)
    for (kind, name, _, _), attempts in retries.items():
        gone = deletions.get((_CANONICAL_KIND.get(kind.lower(), kind), name))
        later = attempts[1:]
        before = [a for a in later if gone is None or a.seq < gone]
        after = [a for a in later if gone is not None and a.seq > gone]
        for part, while_deleting in ((before, False), (after, True)):
            if part:
                _retry_row(rows, part, history.start, deleting=while_deleting)


def _log_object(rec: LogRecord, seen: set[str]) -> str:
    """The object a log line is about: a recorded object of its name, else a claim when the
    line names a namespace (a reconcile), else the library logger the name is (MatrixOne's
    clients inside the operator log ``name: hakeeper-client-backend`` with no namespace)."""
    kind = next((k for k in ("CNClaim", "CNClaimSet", "Pod") if k in seen), None)
    if kind is None and rec.namespace:
        kind = "CNClaim"
    if kind is not None and rec.name:
        return object_ref(kind, rec.name)
    return f"operator ({rec.name})" if rec.name else "operator"


def _log_rows(rows: _Rows, history: History) -> None:
    kinds: dict[str, set[str]] = defaultdict(set)
    for change in history.changes():
        kinds[change.name].add(change.kind)
    groups: dict[tuple[Any, ...], list[LogRecord]] = {}
    for rec in history.logs():
        controller_kind = _CONTROLLER_KINDS.get(str(rec.fields.get("controller", "")))
        if classify(rec) in _CLAIMSET_KINDS:
            obj = object_ref("CNClaimSet", rec.name)
        elif controller_kind is not None:
            obj = object_ref(controller_kind, rec.name) if rec.name else "operator"
        else:
            obj = _log_object(rec, kinds.get(rec.name, set()))
        key = _group_key(rec, obj)
        if key is not None:
            groups.setdefault(key, []).append(rec)
            continue
        text = _single_log_text(rec)
        if text is not None:
            rows.add(rec.seq, rec.t, rec.component, obj, text)
    for key, lines in groups.items():
        first = lines[0]
        rows.add(
            first.seq,
            first.t,
            first.component,
            key[0],
            _group_text(key, lines, history.start),
            end_offset=lines[-1].t - history.start if len(lines) > 1 else None,
            count=len(lines),
        )


def _violation_rows(rows: _Rows, history: History, verdicts: Iterable[Verdict]) -> None:
    seen: set[str] = set()
    for verdict in verdicts:
        if not verdict.failed or verdict.invariant in seen:
            continue
        seen.add(verdict.invariant)
        viol = verdict.violation
        if viol is None:
            note = verdict.note or "failed without a recorded observation"
            last_seq = history[-1].seq if len(history) else 0
            rows.add(
                last_seq,
                history.end,
                "apiserver",
                "–",
                f"VIOLATION {verdict.invariant}: {note}",
                violation=True,
            )
            continue
        objects = ", ".join(normalise_ref(o) for o in viol.objects) or "–"
        rows.add(
            viol.seq,
            viol.t,
            "apiserver",
            objects,
            f"VIOLATION {verdict.invariant}: {viol.message}",
            violation=True,
        )


def build_rows(history: History, verdicts: Sequence[Verdict]) -> list[TimelineRow]:
    """The timeline rows of one test, in the order things happened."""
    rows = _Rows(start=history.start)
    effects, ours = _attribute_writes(history)
    _change_rows(rows, history, ours)
    _action_rows(rows, history, effects)
    _log_rows(rows, history)
    for marker in history.markers():
        text = MARKER_TEXT.get(marker.label, marker.label)
        rows.add(marker.seq, marker.t, marker.component, "–", text)
    _period_rows(rows, history)
    _interposed_rows(rows, history)
    _churn_rows(rows, history)
    _violation_rows(rows, history, verdicts)
    return rows.sorted()


def _churn_rows(rows: _Rows, history: History) -> None:
    """Per pool, one condensed row of the pods it marked for deletion without their ever
    serving (observe/churn.py), like the Finalize retries' row."""
    by_pool: dict[str, list[Churned]] = defaultdict(list)
    for churn in churned_pods(history):
        by_pool[churn.pool].append(churn)
    for pool, found in by_pool.items():
        first, last = found[0], found[-1]
        pods = ", ".join(
            f"pod/{c.pod} after {c.life:.1f}s ({c.how}"
            + (f"; the extra pod of claim/{c.explained_by}'s Pending bind)" if c.explained_by
               else ")")
            for c in found[:4]
        ) + ("…" if len(found) > 4 else "")  # fmt: skip
        text = (f"pool churned {_times(len(found))}: pods marked for deletion before they "
                f"ever served, {_span(first.marked - rows.start, last.marked - rows.start)}: "
                f"{pods}")  # fmt: skip
        rows.add(first.seq, first.marked, "operator", f"CNPool/{pool}", text,
                 end_offset=last.marked - rows.start if len(found) > 1 else None,
                 count=len(found))  # fmt: skip


def _interposed_rows(rows: _Rows, history: History) -> None:
    """What the interposer did to the operator's requests and watch events: one row per
    request it held, failed, crashed on or answered itself (a request it only passed on is
    no row), and per rule one condensed row of the watch events it held back or dropped."""
    for call in history.api_calls():
        if call.action == "pass":
            continue
        obj = object_ref(_KIND_OF_RESOURCE.get(call.resource, call.resource), call.name or "*")
        sub = f"/{call.subresource}" if call.subresource else ""
        text = f"interposer {call.action} the operator's {call.verb}{sub}"
        if call.held_ms is not None:
            text += f" for {call.held_ms / 1000:.1f} s"
        if call.status:
            text += f" (answered {call.status})"
        rows.add(call.seq, call.t, "interposer", obj, f"{text} [rule {call.rule}]")
    runs: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for d in history.deliveries():
        if d.action != "delivered":
            runs[(d.rule, d.action)].append(d)
    for (rule, action), found in runs.items():
        first, last = found[0], found[-1]
        objects = sorted({f"{d.resource}/{d.name}" for d in found})
        rows.add(
            first.seq, first.t, "interposer", ", ".join(objects[:3]) + ("…" if len(objects) > 3
                                                                        else ""),
            f"interposer {action} {len(found)} watch event(s) for the operator [rule {rule}]",
            end_offset=last.t - rows.start, count=len(found),
        )  # fmt: skip


def _period_rows(rows: _Rows, history: History) -> None:
    """One row per end of a period, in its kind's words (an end says how long it lasted)."""
    opened: dict[tuple[str, str], float] = {}
    for edge in history.period_edges():
        key = (edge.period, edge.subject)
        if edge.edge == "start":
            opened.setdefault(key, edge.t)
            text = edge.text()
        else:
            start = opened.pop(key, None)
            text = edge.text(None if start is None else edge.t - start)
        rows.add(edge.seq, edge.t, edge.component, _period_object(edge), text)


def _period_object(edge: PeriodEdge) -> str:
    if edge.period == MATRIXONE_FAULT.name:
        return f"matrixone/{edge.subject}"
    return "operator" if edge.component == "operator" else "–"


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def utc_clock(t: float) -> str:
    """``HH:MM:SS.mmm`` in UTC."""
    return datetime.fromtimestamp(t, UTC).strftime("%H:%M:%S.%f")[:-3]


def render_markdown(rows: Sequence[TimelineRow], *, title: str, meta: dict[str, str]) -> str:
    """The timeline as a Markdown document: title, metadata list, legend, table."""
    lines = [f"# {title}", ""]
    lines += [f"- **{_cell(k)}**: {_cell(str(v))}" for k, v in meta.items()]
    if meta:
        lines.append("")
    if rows:
        start = rows[0].t - rows[0].offset
        day = datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%d %H:%M:%S")
        lines.append(
            f"Times are UTC; +s counts seconds from the first recorded entry ({day} UTC). "
            "⚡ marks an action of mo-chaos (fault or agent emulation), "
            "❌ the first violation of an invariant."
        )
        lines.append("")
    lines += ["| time (UTC) | +s | component | object | event |", "|---|---:|---|---|---|"]
    for row in rows:
        event = _cell(row.event)
        if row.action:
            event = f"⚡ **{event}**"
        elif row.violation:
            event = f"❌ **{event}**"
        lines.append(
            f"| {utc_clock(row.t)} | {row.offset:.1f} | {_cell(row.component)} "
            f"| {_cell(row.object)} | {event} |"
        )
    if not rows:
        lines += ["", "(no events recorded)"]
    return "\n".join(lines) + "\n"
