"""The vocabulary of mo-chaos: every concept the layers share, in one place.

A run is a Cluster (from a provider) plus an OperatorTarget, a Scenario of
Actions gated by Triggers, a History recorded from watches, logs and our own
actions, and Invariants that turn the History into Verdicts. Everything else
in the package is built from these names; nothing here talks to an API.
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, Protocol, TypeAlias, runtime_checkable

from mochaos.config import CheckOptions

# --------------------------------------------------------------------------
# Well-known names of the operator's API (docs/operator-behaviour.md §2, §13)
# --------------------------------------------------------------------------

GROUP = "core.matrixorigin.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

PHASE_LABEL = "pool.matrixorigin.io/phase"
CLAIMED_BY_LABEL = "pool.matrixorigin.io/claimed-by"
POOL_NAME_LABEL = "pool.matrixorigin.io/pool-name"
CLAIMSET_LABEL = "matrixorigin.io/claimset"
OWNER_LABEL = "matrixorigin.io/owner"
LAST_OWNER_LABEL = "matrixorigin.io/last-owner"
INSTANCE_ID_LABEL = "claim.matrixorigin.io/instance-id"
KRUISE_STATE_LABEL = "lifecycle.apps.kruise.io/state"
SCORE_ANNOTATION = "matrixorigin.io/score"
RECLAIMED_AT_ANNOTATION = "matrixorigin.io/reclaimed-at"
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
CLAIM_FINALIZER = "matrixorigin.io/cn-claim-manager"
CLAIMSET_FINALIZER = "matrixorigin.io/cn-claimset-manager"

RUN_ID_LABEL = "mochaos.io/run-id"
"""Every object mo-chaos creates carries this label (docs/operator-behaviour.md §11.10)."""
SESSIONS_ANNOTATION = "mochaos.io/sessions"
"""Written on a CN pod when mo-chaos changes its sessions, so the operator's store
controller re-reads them now rather than on its next 30 s resync (docs/model-pacing.md)."""

Status: TypeAlias = Literal["pass", "fail", "skipped"]


# --------------------------------------------------------------------------
# History: what was seen, in the order it was seen
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Change:
    """One watch event of one object: the object as the apiserver sent it."""

    seq: int
    t: float
    kind: str
    event: str
    namespace: str
    name: str
    rv: int
    obj: dict[str, Any]
    component: str = "apiserver"


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One structured log line of the operator under test (or of the model)."""

    seq: int
    t: float
    level: str
    msg: str
    namespace: str
    name: str
    fields: dict[str, Any] = field(default_factory=dict)
    component: str = "operator"


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """One chaos or agent action, with proof of when it landed.

    ``trigger_rv`` is the resourceVersion of the observation that satisfied the
    action's trigger (None for an unconditional action); ``write_rv`` is the
    resourceVersion the apiserver gave our write. ``in_window`` is filled in
    when the recorder verified that the trigger still held at ``write_rv``.
    ``intent`` marks a record appended before its write was sent (``write_rv``
    and ``error`` filled in when it returned): any change the write caused comes
    after it in the history.
    """

    seq: int
    t: float
    action: str
    kind: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    trigger: str | None = None
    trigger_rv: int | None = None
    write_rv: int | None = None
    error: str | None = None
    in_window: bool | None = None
    component: str = "chaos"
    intent: bool = False


APISERVER_UNAVAILABLE = "cluster: apiserver unavailable"
"""Label of the marker that starts a period the apiserver did not answer."""
APISERVER_AVAILABLE = "cluster: apiserver available again"
"""Label prefix of the marker that ends it (the period's length follows)."""
DEPENDENCY_UNAVAILABLE = "cluster: dependency unavailable"
"""Label prefix of the marker that starts a period a process the operator depends on (the
MatrixOne double, the workload controller) was down or unhealthy: ``…: <name> (<why>)``."""
DEPENDENCY_AVAILABLE = "cluster: dependency available again"
"""Label prefix of the marker that ends it: ``…: <name> after <seconds>s``."""
OPERATOR_FROZEN = "operator: process stopped"
"""Label prefix of the marker that starts a period the operator's process was stopped
(SIGSTOP: the framework's pause fault, or someone else): ``…: <pid> (SIGSTOP)``."""
OPERATOR_THAWED = "operator: process running again"
"""Label prefix of the marker that ends it: ``… after <seconds>s``."""


@dataclass(frozen=True, slots=True)
class Marker:
    """A named point in the scenario (started, epilogue, settled, ...)."""

    seq: int
    t: float
    label: str
    component: str = "chaos"


Entry: TypeAlias = Change | LogRecord | ActionRecord | Marker

_ENTRY_TYPES: dict[str, type] = {
    "change": Change,
    "log": LogRecord,
    "action": ActionRecord,
    "marker": Marker,
}
_TYPE_NAMES = {cls: name for name, cls in _ENTRY_TYPES.items()}


def entry_to_dict(entry: Entry) -> dict[str, Any]:
    """Serialise an entry to a JSON-able dict with a ``type`` discriminator."""
    return {"type": _TYPE_NAMES[type(entry)], **asdict(entry)}


def entry_from_dict(data: dict[str, Any]) -> Entry:
    """Inverse of :func:`entry_to_dict`."""
    data = dict(data)
    cls = _ENTRY_TYPES[data.pop("type")]
    return cls(**data)


class State:
    """The objects as of some point of a History: kind -> name -> object."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, dict[str, Any]]] = {}

    def apply(self, change: Change) -> None:
        """Fold one watch event into the state."""
        bucket = self.objects.setdefault(change.kind, {})
        if change.event == "DELETED":
            bucket.pop(change.name, None)
        else:
            bucket[change.name] = change.obj

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist at this point."""
        return self.objects.get(kind, {}).get(name)

    def all(self, kind: str) -> dict[str, dict[str, Any]]:
        """All objects of a kind, by name."""
        return self.objects.get(kind, {})

    def copy(self) -> State:
        """A shallow copy (objects are treated as immutable)."""
        other = State()
        other.objects = {k: dict(v) for k, v in self.objects.items()}
        return other


class History(Sequence[Entry]):
    """An immutable, ordered sequence of entries (receive order = ``seq``)."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._entries: tuple[Entry, ...] = tuple(entries)

    def __getitem__(self, index):  # type: ignore[override]
        return self._entries[index]

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries)

    @property
    def start(self) -> float:
        """Time of the first entry (0.0 for an empty history)."""
        return self._entries[0].t if self._entries else 0.0

    @property
    def end(self) -> float:
        """Time of the last entry (0.0 for an empty history)."""
        return self._entries[-1].t if self._entries else 0.0

    def changes(self, kind: str | None = None) -> Iterator[Change]:
        """Watch events, optionally of one kind."""
        for e in self._entries:
            if isinstance(e, Change) and (kind is None or e.kind == kind):
                yield e

    def logs(self, msg: str | None = None) -> Iterator[LogRecord]:
        """Operator log records, optionally only those with an exact message."""
        for e in self._entries:
            if isinstance(e, LogRecord) and (msg is None or e.msg == msg):
                yield e

    def actions(self, action: str | None = None) -> Iterator[ActionRecord]:
        """Chaos/agent actions, optionally of one name."""
        for e in self._entries:
            if isinstance(e, ActionRecord) and (action is None or e.action == action):
                yield e

    def markers(self) -> Iterator[Marker]:
        """Scenario markers."""
        for e in self._entries:
            if isinstance(e, Marker):
                yield e

    def replay(self) -> Iterator[tuple[Entry, State]]:
        """Yield each entry with the object state *after* it (state is shared, mutable)."""
        state = State()
        for e in self._entries:
            if isinstance(e, Change):
                state.apply(e)
            yield e, state

    def state_at_rv(self, rv: int) -> State:
        """Objects as of resourceVersion ``rv`` (etcd revisions are global)."""
        state = State()
        for e in self._entries:
            if isinstance(e, Change) and e.rv <= rv:
                state.apply(e)
        return state

    def final_state(self) -> State:
        """Objects after the last entry."""
        state = State()
        for e in self.changes():
            state.apply(e)
        return state

    def to_jsonl(self, path: Path) -> None:
        """Write the history as JSON lines (one entry per line; gzip when named ``*.gz``)."""
        with _open_text(path, "w") as fh:
            for e in self._entries:
                fh.write(json.dumps(entry_to_dict(e), sort_keys=True) + "\n")

    @classmethod
    def from_jsonl(cls, path: Path) -> History:
        """Read a history written by :meth:`to_jsonl` or streamed by the recorder: a later
        line with the same ``seq`` supersedes the earlier one (an entry completed after it
        was written, see mochaos.observe.stream), entries keep their first position."""
        entries: dict[int, Entry] = {}
        with _open_text(path, "r") as fh:
            for line in fh:
                if line.strip():
                    entry = entry_from_dict(json.loads(line))
                    entries[entry.seq] = entry
        return cls(entries.values())


def _open_text(path: Path, mode: str) -> IO[str]:
    """Open a text file, through gzip when its name ends in ``.gz``."""
    if path.suffix == ".gz":
        return gzip.open(path, mode + "t", encoding="utf-8")
    return path.open(mode, encoding="utf-8")


# --------------------------------------------------------------------------
# Verdicts
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Violation:
    """The first observation that broke an invariant."""

    t: float
    seq: int
    objects: tuple[str, ...]
    message: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one invariant over one history."""

    invariant: str
    status: Status
    bugs: tuple[str, ...] = ()
    severity: str = "error"
    violation: Violation | None = None
    note: str = ""

    @property
    def failed(self) -> bool:
        """True when the invariant was violated."""
        return self.status == "fail"


@runtime_checkable
class Invariant(Protocol):
    """A named check over a History: a pure function, no API access."""

    id: str
    severity: str
    bugs: tuple[str, ...]
    at_settle_only: bool

    def check(self, history: History, options: CheckOptions, *, final: bool = True) -> Verdict:
        """Evaluate the invariant over the whole history (``final``: at settle time)."""
        ...


# --------------------------------------------------------------------------
# Clusters and operator targets
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cluster:
    """A reachable Kubernetes cluster, as a provider handed it out."""

    name: str
    provider: str
    kubeconfig: Path
    version: str
    context: str | None = None
    audit_log: Path | None = None
    state_dir: Path | None = None
    """Where the provider keeps this cluster's state (local clusters: its doubles too)."""
    events_log: Path | None = None
    """JSON lines, one per restart of one of the cluster's processes (local clusters: the
    supervisor's, see mochaos.cluster.events); the recorder follows it."""


class ClusterProvider(Protocol):
    """Starts, reuses and removes clusters of one kind (local, kind, existing)."""

    name: str

    def up(self) -> Cluster:
        """Start the cluster, or reuse a healthy one of the same name."""
        ...

    def down(self) -> None:
        """Stop the cluster and remove what ``up`` created."""
        ...

    def load_image(self, ref: str) -> None:
        """Make a container image available to the cluster's nodes."""
        ...

    def audit_log(self) -> Path | None:
        """Path of the apiserver audit log, where the provider has one."""
        ...


@dataclass(frozen=True)
class PoolSpec:
    """What a scenario's CNPool needs from the target's environment: a CNSet template,
    the pool's dependencies (LogSet / DNSet) and extra pod labels."""

    template: dict[str, Any]
    deps: dict[str, Any]
    pod_labels: dict[str, str] = field(default_factory=dict)
    max_pods: int | None = None
    """The pool's cap on CN pods (``strategy.scaleStrategy.maxPods``), when it has one."""

    def overlay(self, pool: dict[str, Any]) -> dict[str, Any]:
        """Put this spec's template, deps, pod labels and maxPods onto a scenario's CNPool."""
        import copy

        spec = pool["spec"]
        spec["template"] = copy.deepcopy(self.template)
        spec["deps"] = copy.deepcopy(self.deps)
        spec.setdefault("podLabels", {}).update(self.pod_labels)
        if self.max_pods is not None:
            spec["strategy"]["scaleStrategy"]["maxPods"] = self.max_pods
        return pool


@dataclass(frozen=True)
class Waits:
    """How long (wall seconds) the target may legitimately take for the steps a scenario
    waits on; sized from the target's real intervals (model targets: time-scaled)."""

    pool_ready: float = 90.0
    """A CNPool's idle pods exist and are Idle (pod start, store registration, cache)."""
    bind: float = 90.0
    """A claim is Bound (an Idle pod, or a new pod started for it)."""
    deletion_cost: float = 55.0
    """The CN store controller published a pod's session count as its deletion cost."""
    migration_phase: float = 130.0
    """A migration reaches its next phase (target bound, source draining, reclaimed, done)."""
    log_line: float = 40.0
    """The operator logs an expected line (a reconcile pass)."""
    teardown: float = 30.0
    """A deleted test namespace disappears while the operator still runs (it finalizes
    its objects); after this, mo-chaos releases what is left and reports it."""


class Sessions(Protocol):
    """Client sessions on a CN, as MatrixOne's query service reports them to the operator.

    The platform agent's drain is a CN with open sessions: scenarios hold sessions on a CN
    and release them. Each environment implements it its own way (the model reads an
    annotation, the local MatrixOne double its control API, kind real SQL connections).
    """

    def hold(self, pod: str, n: int) -> int | None:
        """Keep exactly ``n`` sessions on ``pod`` from now on (0 releases them); return the
        resourceVersion of the Kubernetes write it made, if it made one."""
        ...

    def close(self) -> None:
        """Release every session held (idempotent)."""
        ...


class RunningOperator(Protocol):
    """One started operator target, watching one namespace (or the cluster)."""

    target: str
    version: str
    user_agent: str
    log_path: Path | None
    """The operator's log as mo-chaos keeps it (None when there is none)."""
    pool_spec: PoolSpec | None
    """What the scenario's CNPool needs on this target (None: the model's placeholder)."""
    sessions: Sessions
    waits: Waits

    def follow_log(self, stop: threading.Event) -> Iterator[str]:
        """Follow the operator's log from its start, yielding raw lines, until ``stop`` is set."""
        ...

    def stop(self) -> None:
        """Stop the operator (idempotent)."""
        ...

    def restart(self) -> None:
        """Stop and start the operator again, keeping its log."""
        ...

    def pause(self, seconds: float) -> None:
        """Freeze the operator's process for a while; it resumes on its own."""
        ...

    def kill(self) -> None:
        """Kill the operator without a chance to clean up; it stays down."""
        ...


@dataclass(frozen=True)
class Environment:
    """What an operator target needs on the local cluster besides the control plane."""

    kruise: str | None = None
    """The OpenKruise version whose kruise-manager must run (None: no workload controller)."""
    matrixone: bool = False
    """Whether the MatrixOne double must run (HAKeeper, lock service, CN query services)."""

    def describe(self) -> str:
        """``kruise-manager v1.4.0, the MatrixOne double`` / ``nothing``, for messages."""
        parts = [f"kruise-manager {self.kruise}"] if self.kruise else []
        parts += ["the MatrixOne double"] if self.matrixone else []
        return ", ".join(parts) or "nothing"


class OperatorTarget(Protocol):
    """What ``--operator`` names: how to install and start an operator.

    A target may also keep test namespaces ready ahead in an attribute ``warm``
    (:class:`mochaos.operator.warm.WarmNamespaces`): the plugin then hands the test one of
    those, and :meth:`start` finds its operator already running.
    """

    spec: str
    version: str
    images: tuple[str, ...]
    """Container images the cluster's nodes need (loaded by the provider before install)."""
    crds: str
    """Which CRDs the target brings: ``own`` (mo-chaos's schemas) or ``operator``."""
    time_scaled: bool
    """True when the target honours ``--time-scale`` (only the reference model does)."""
    environment: Environment
    """What it needs running beside the control plane on the local cluster (its
    ``install`` makes sure it runs; the reference model needs nothing)."""

    def install(self, cluster: Cluster) -> None:
        """Install cluster-wide parts (CRDs, chart) once per cluster."""
        ...

    def start(self, cluster: Cluster, namespace: str, log_dir: Path) -> RunningOperator:
        """Start an operator for one test namespace and wait until it is ready."""
        ...

    def close(self) -> None:
        """Release what :meth:`install` holds for the session (idempotent)."""
        ...


# --------------------------------------------------------------------------
# The outcome of one scenario, as the report layer receives it
# --------------------------------------------------------------------------

Outcome: TypeAlias = Literal["passed", "failed", "inconclusive", "error"]


@dataclass(slots=True)
class ScenarioResult:
    """Everything the reports need about one test, JSON-serialisable via ``to_dict``.

    ``detection_latency`` gives, per failed invariant, the seconds from the violation
    to its first detection by the continuous monitor during the run.
    ``outcome`` is the scenario's verdict: ``failed`` means the operator broke an
    invariant, ``inconclusive`` that a fault missed its window, ``error`` that
    the infrastructure failed (never the operator's fault). ``check_options`` are
    the CheckOptions the verdicts were judged with (empty when none were).
    """

    nodeid: str
    outcome: Outcome
    operator_target: str = ""
    operator_version: str = ""
    cluster_provider: str = ""
    k8s_version: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    finalize_retries: dict[str, int] = field(default_factory=dict)
    agent_migration_retries: int = 0
    audit_counts: dict[str, float] = field(default_factory=dict)
    detection_latency: dict[str, float] = field(default_factory=dict)
    monitor_cpu: float = 0.0
    """CPU seconds the invariant monitor spent judging the run as it went (and settling)."""
    check_options: dict[str, float] = field(default_factory=dict)
    bugs: list[str] = field(default_factory=list)
    duration: float = 0.0
    seed: int | None = None
    message: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)
    phase: str = ""
    """The mo-chaos phase an error happened in (empty unless the outcome is ``error``)."""
    phases: list[dict[str, Any]] = field(default_factory=list)
    """The test's phases in order: name, seconds, ok."""
    findings: list[str] = field(default_factory=list)
    """What mo-chaos had to clean up itself (e.g. finalizers released at teardown)."""

    @property
    def max_finalize_retries(self) -> int:
        """The largest finalize attempt count of any claim (0 when none)."""
        return max(self.finalize_retries.values(), default=0)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (verdicts flattened)."""
        data = asdict(self)
        data["max_finalize_retries"] = self.max_finalize_retries
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScenarioResult:
        """Inverse of :meth:`to_dict`."""
        data = {k: v for k, v in data.items() if k != "max_finalize_retries"}
        verdicts = []
        for v in data.pop("verdicts", []):
            viol = v.get("violation")
            verdicts.append(
                Verdict(
                    invariant=v["invariant"],
                    status=v["status"],
                    bugs=tuple(v.get("bugs", ())),
                    severity=v.get("severity", "error"),
                    note=v.get("note", ""),
                    violation=Violation(
                        t=viol["t"],
                        seq=viol["seq"],
                        objects=tuple(viol["objects"]),
                        message=viol["message"],
                    )
                    if viol
                    else None,
                )
            )
        return cls(verdicts=verdicts, **data)
