"""Run configuration: every mo-chaos setting, its one default, and the time scale.

A setting is read from the command line, else the environment (``MOCHAOS_<NAME>``),
else the ini file (``mochaos_<name>`` in pytest.ini / pyproject.toml), else its
default below. Thresholds are given in operator time; :class:`CheckOptions` turns
them into wall time with the run's time scale, and :meth:`CheckOptions.scaled` is
the only place a duration is multiplied by it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from mochaos.errors import UsageError
from mochaos.shard import Shard, parse_shard

# -- thresholds (operator-time seconds), the one set of defaults -----------------------

FINALIZE_TIMEOUT = 60.0
"""A deleting CNClaim may take this long before finalizer-completes fails."""
RETRY_BUDGET = 10
"""Finalize retries allowed per claim within the finalize window."""
MIGRATION_TIMEOUT = 120.0
"""A migration may take this long to end (the operator needs 30-50 s on an idle pool)."""
GRACE = 20.0
"""A bad state may last this long before a state invariant judges it: above the operator's
own legitimate waits (10 s pod-cache grace plus a 2 s requeue)."""
CONVERGE_TIMEOUT = 60.0
"""CNClaimSet replicas must reach spec.replicas within this long."""
CHURN_BUDGET = 0
"""Pods of one pool that may be killed right after they appeared (within ``CHURN_STILLBORN``,
before they ever served), with no Pending claim's bind to explain them, within the retry
window: none. The real pool kills one such pod per bind of a Pending claim (it counts the
claim twice for a moment), which observe/churn.py explains; a pool that kills the CloneSet's
replacements while an older pod drains makes ones nothing explains."""
CHURN_STILLBORN = 5.0
"""A pool pod marked for deletion this soon after it appeared was killed before its CN could
have started (the real pool kills a replacement 0.3-2.6 s after kruise makes it; a pod killed
later, e.g. because its claim set was scaled down meanwhile, is the pool following demand)."""
CHURN_EXPLAIN_WITHIN = 2.0
"""A Pending claim's bind this close to a pod's appearance explains the pod (the real pool
scales out within 0.1 s of the label write)."""
CONFLICT_BUDGET = 5
"""Refused writes of the operator to one object in a row, none landing between, allowed to
last longer than the grace: conflicts that are retried and resolve, even in a burst, end
before it (the real pool: six 409s in 0.4 s, then its write landed); a write that can never
succeed does not."""


@dataclass(frozen=True, slots=True)
class CheckOptions:
    """The invariants' thresholds in wall seconds (operator time × ``time_scale``).

    ``time_scale`` multiplies the operator's own intervals (1.0 = faithful); a shrunk
    model keeps the same verdicts because the thresholds shrink with it.
    """

    finalize_timeout: float = FINALIZE_TIMEOUT
    retry_budget: int = RETRY_BUDGET
    retry_window: float = FINALIZE_TIMEOUT
    grace: float = GRACE
    migration_timeout: float = MIGRATION_TIMEOUT
    converge_timeout: float = CONVERGE_TIMEOUT
    churn_budget: int = CHURN_BUDGET
    conflict_budget: int = CONFLICT_BUDGET
    time_scale: float = 1.0

    def scaled(self, seconds: float) -> float:
        """An operator-time interval in wall seconds: the one multiplication by the scale."""
        return seconds * self.time_scale

    @classmethod
    def from_operator_time(
        cls,
        *,
        time_scale: float = 1.0,
        finalize_timeout: float = FINALIZE_TIMEOUT,
        retry_budget: int = RETRY_BUDGET,
        migration_timeout: float = MIGRATION_TIMEOUT,
        grace: float = GRACE,
        converge_timeout: float = CONVERGE_TIMEOUT,
        churn_budget: int = CHURN_BUDGET,
        conflict_budget: int = CONFLICT_BUDGET,
    ) -> CheckOptions:
        """Thresholds given in operator time, scaled to wall time."""
        check_time_scale(time_scale)
        unit = cls(time_scale=time_scale)
        return replace(
            unit,
            finalize_timeout=unit.scaled(finalize_timeout),
            retry_window=unit.scaled(finalize_timeout),
            retry_budget=retry_budget,
            grace=unit.scaled(grace),
            migration_timeout=unit.scaled(migration_timeout),
            converge_timeout=unit.scaled(converge_timeout),
            churn_budget=churn_budget,
            conflict_budget=conflict_budget,
        )


def check_time_scale(value: float) -> float:
    """The time scale, or UsageError when it is not a positive number."""
    if not value > 0:
        raise UsageError(
            f"time scale {value!r} is not positive", hint="use e.g. --time-scale 1.0 (or 0.2)"
        )
    return value


# -- settings -------------------------------------------------------------------------


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{text!r} is not a boolean (use true or false)")


REGISTRY_LOCAL = "local"
"""``--mochaos-registry local``: the registry mo-chaos runs itself (mochaos.cluster.kind)."""
_HOST_PORT = re.compile(r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?$")


def parse_registry(value: str) -> str | None:
    """``--mochaos-registry``: None (load images), :data:`REGISTRY_LOCAL`, or an endpoint URL
    (``host:port`` means plain HTTP, as registries inside a network usually are); ValueError
    for anything else."""
    value = value.strip()
    if not value:
        return None
    if value == REGISTRY_LOCAL:
        return REGISTRY_LOCAL
    scheme, sep, rest = value.partition("://")
    host = rest if sep else value
    if (sep and scheme not in ("http", "https")) or not _HOST_PORT.match(host.rstrip("/")):
        raise ValueError(
            "neither 'local' nor a registry address: pass local, <host>:<port> or "
            "http(s)://<host>:<port>"
        )
    return f"{scheme if sep else 'http'}://{host.rstrip('/')}"


def _float(text: str) -> float:
    return float(text)


def _int(text: str) -> int:
    return int(text)


def _path(text: str) -> Path:
    return Path(text).expanduser()


def _words(text: str) -> tuple[str, ...]:
    return tuple(w for w in text.replace(",", " ").split() if w)


@dataclass(frozen=True)
class Setting:
    """One mo-chaos setting: its option, ini key, environment variable and default."""

    name: str
    """Attribute of :class:`RunConfig`; ini key ``mochaos_<name>``, env ``MOCHAOS_<NAME>``."""
    flag: str
    help: str
    default: Any
    parse: Callable[[str], Any] = str
    choices: tuple[str, ...] = ()
    switch: bool = False
    """A flag without a value (store_true)."""
    repeat: bool = False
    """The option may be given several times (values collected in a tuple)."""
    group: str = "run"
    check: bool = False
    """An invariant threshold in operator time: ``RunConfig.check_options`` passes it on and
    ``python -m mochaos check`` can override it."""
    target: bool = False
    """Operator targets read it (``RunConfig.target_options``)."""
    shown: str = ""
    """How the docs show the default, when not as its value."""
    doc: str = ""
    """Markdown the docs' settings table adds to ``help`` (links, details)."""

    @property
    def ini(self) -> str:
        """The ini-file key."""
        return f"mochaos_{self.name}"

    @property
    def env(self) -> str:
        """The environment variable."""
        return f"MOCHAOS_{self.name.upper()}"


PROVIDERS = ("local", "kind", "existing")
"""The cluster providers' names (`--mochaos-cluster`, `--cluster`): one room each under
mochaos/cluster/, built by ``mochaos.cluster.make_provider``."""
DEFAULT_WORKERS = 6
"""Scenarios at once by default: measured on 2 cores, six seed scenarios take about a fifth
of the sequential time with the same verdicts (bench/speed/main_job.py)."""
KIND_WORKERS = 2
"""Scenarios at once by default on kind, where each runs real MatrixOne pods (a namespace
peaks at about 1.7 GB and half a core): docs/kind.md, "Figures" (bench/feasibility/kind.py)."""


def default_workers(cluster: str) -> int:
    """Scenarios at once when ``--mochaos-workers`` is not given, for that cluster provider."""
    return KIND_WORKERS if cluster == "kind" else DEFAULT_WORKERS


MINIO_MODES = ("auto", "docker", "in-cluster")
INTERPOSER_MODES = ("on", "off")
"""``--mochaos-interposer``: the operator through an interposer of its own, or direct."""
WARM_NAMESPACES = 1
"""Namespaces a pytest process keeps ready for a real manager's next tests: one overlaps
the ~40 s MatrixOne set-up of the next test with the current one
(bench/speed/warm_namespaces.py)."""

SETTINGS: tuple[Setting, ...] = (
    Setting("operator", "--operator", "operator target: model:<profile>, source:<dir>[@rev], "
            "binary:<path>, image:<ref> or installed", "model:upstream"),
    Setting("operator_crds", "--operator-crds", "binary:/image: targets: directory of the "
            "operator's CRDs (deploy/crds of a checkout)", None, _path, target=True),
    Setting("operator_entrypoint", "--operator-entrypoint", "image: on the local cluster: "
            "the manager's path in the image", "/manager", target=True),
    Setting("operator_ready_timeout", "--operator-ready-timeout", "seconds a real manager "
            "may take to start its controllers", 90.0, _float, target=True),
    Setting("interposer", "--mochaos-interposer", "on the local cluster the operator under "
            "test talks to the apiserver through an interposer of its own (on), which "
            "scenarios steer, or directly (off)", "on", choices=INTERPOSER_MODES, target=True,
            doc="[interleaving.md](interleaving.md)"),
    Setting("warm_namespaces", "--mochaos-warm-namespaces", "real managers on the local "
            "cluster: test namespaces each pytest process keeps ready ahead (MatrixOne's "
            "LogSet and DNSet Ready, the manager started); 0 turns it off",
            WARM_NAMESPACES, _int, target=True, doc="([speed.md](speed.md))"),
    Setting("time_scale", "--time-scale", "multiply the model's intervals and our thresholds "
            "(model targets only)", 1.0, _float, check=True, target=True,
            doc="(refused for real managers, whose intervals are compiled in)"),
    Setting("finalize_timeout", "--finalize-timeout", "seconds (operator time) a deleting "
            "CNClaim may take", FINALIZE_TIMEOUT, _float, check=True),
    Setting("retry_budget", "--retry-budget", "finalize retries allowed per claim in the "
            "finalize window", RETRY_BUDGET, _int, check=True),
    Setting("migration_timeout", "--migration-timeout", "seconds (operator time) a migration "
            "may take to end", MIGRATION_TIMEOUT, _float, check=True),
    Setting("churn_budget", "--churn-budget", "pool pods killed right after they appeared "
            "that no Pending claim's bind explains, allowed per pool in the finalize window",
            CHURN_BUDGET, _int, check=True),
    Setting("conflict_budget", "--conflict-budget", "refused writes of the operator to one "
            "object in a row, none landing between, allowed past the grace", CONFLICT_BUDGET,
            _int, check=True),
    Setting("workers", "--mochaos-workers", "scenarios run at once when the packaged "
            "suites are collected and no -n is given (they wait far more than they "
            f"compute; default {DEFAULT_WORKERS}, on kind {KIND_WORKERS})", None, _int,
            shown=f"{DEFAULT_WORKERS} (kind: {KIND_WORKERS})"),
    Setting("chaos_seed", "--chaos-seed", "seed for every random choice (printed on failure "
            "to replay a run)", None, _int, shown="random"),
    Setting("cluster", "--mochaos-cluster", "cluster provider: local (default), kind, "
            "existing", "local", choices=PROVIDERS, target=True),
    Setting("kubeconfig", "--mochaos-kubeconfig", "existing: the kubeconfig file", None, _path,
            doc="([safety.md](safety.md))"),
    Setting("context", "--mochaos-context", "existing: the kubeconfig context to use", None),
    Setting("allow_context", "--mochaos-allow-context", "existing: a context that may be used "
            "(repeatable); any other is refused", (), _words, repeat=True,
            doc="([safety.md](safety.md))"),
    Setting("keep_cluster", "--mochaos-keep-cluster", "kind: keep the cluster afterwards",
            False, _bool, switch=True),
    Setting("registry", "--mochaos-registry", "kind: the nodes pull every image through a "
            "registry instead of kind load: local (one mo-chaos runs and pushes to) or "
            "<host>:<port> / http(s)://<host>:<port> (yours, already holding them)", None,
            parse_registry, target=True, doc="([kind.md](kind.md#through-a-registry))"),
    Setting("reports_dir", "--mochaos-reports-dir", "root of the run reports", Path("reports"),
            _path, doc="(`reports/<run-id>/`; `reports/latest` links the newest)"),
    Setting("explore", "--mochaos-explore", "an exploration.json (python -m mochaos explore): "
            "pytest --pyargs mochaos.explore runs one test per case it lists", None, _path),
    Setting("shard", "--mochaos-shard", "run shard i of n of the collected scenarios (i/n, "
            "dealt by node id; merge the shards' reports with `mochaos merge`)", None,
            parse_shard, doc="([ci.md](ci.md))"),
    Setting("mo_image", "--mochaos-mo-image", "kind: MatrixOne image of the pool", None,
            group="kind", target=True, doc="([kind.md](kind.md))"),
    Setting("mo_version", "--mochaos-mo-version", "kind: semantic version of the MatrixOne "
            "image when its tag is not one (e.g. a nightly tag)", None, group="kind",
            target=True),
    Setting("minio", "--mochaos-minio", "kind: where MatrixOne's object storage runs", "auto",
            choices=MINIO_MODES, group="kind", target=True),
    Setting("chart_repo", "--mochaos-chart-repo", "kind: Helm repository URL", None,
            group="kind", target=True),
    Setting("chart_version", "--mochaos-chart-version", "kind: chart version", None,
            group="kind", target=True),
    Setting("chart_path", "--mochaos-chart-path", "kind: a local chart directory instead of "
            "the repository", None, _path, group="kind", target=True),
)  # fmt: skip

SETTING_BY_NAME = {s.name: s for s in SETTINGS}
CHECK_SETTINGS = tuple(s for s in SETTINGS if s.check)
"""The invariant thresholds among the settings (operator time, and the time scale)."""
_DEFAULT = {s.name: s.default for s in SETTINGS}


@dataclass(frozen=True)
class RunConfig:
    """The mo-chaos settings of one run, parsed and validated once."""

    run_id: str
    operator: str = _DEFAULT["operator"]
    operator_crds: Path | None = _DEFAULT["operator_crds"]
    operator_entrypoint: str = _DEFAULT["operator_entrypoint"]
    operator_ready_timeout: float = _DEFAULT["operator_ready_timeout"]
    interposer: str = _DEFAULT["interposer"]
    warm_namespaces: int = _DEFAULT["warm_namespaces"]
    time_scale: float = _DEFAULT["time_scale"]
    finalize_timeout: float = _DEFAULT["finalize_timeout"]
    retry_budget: int = _DEFAULT["retry_budget"]
    migration_timeout: float = _DEFAULT["migration_timeout"]
    churn_budget: int = _DEFAULT["churn_budget"]
    conflict_budget: int = _DEFAULT["conflict_budget"]
    workers: int | None = _DEFAULT["workers"]
    chaos_seed: int = 0
    """``resolve`` draws a random seed when none is given (the setting's default is None)."""
    cluster: str = _DEFAULT["cluster"]
    kubeconfig: Path | None = _DEFAULT["kubeconfig"]
    context: str | None = _DEFAULT["context"]
    allow_context: tuple[str, ...] = _DEFAULT["allow_context"]
    keep_cluster: bool = _DEFAULT["keep_cluster"]
    registry: str | None = _DEFAULT["registry"]
    reports_dir: Path = _DEFAULT["reports_dir"]
    explore: Path | None = _DEFAULT["explore"]
    shard: Shard | None = _DEFAULT["shard"]
    mo_image: str | None = _DEFAULT["mo_image"]
    mo_version: str | None = _DEFAULT["mo_version"]
    minio: str = _DEFAULT["minio"]
    chart_repo: str | None = _DEFAULT["chart_repo"]
    chart_version: str | None = _DEFAULT["chart_version"]
    chart_path: Path | None = _DEFAULT["chart_path"]
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    """Where each non-default setting came from: ``option``, ``env`` or ``ini``."""

    def check_options(self) -> CheckOptions:
        """The invariants' thresholds for this run, in wall seconds."""
        return CheckOptions.from_operator_time(
            **{s.name: getattr(self, s.name) for s in CHECK_SETTINGS}
        )

    def target_options(self) -> dict[str, Any]:
        """What operator targets may read from the run's settings (and the run id)."""
        return {s.name: getattr(self, s.name) for s in SETTINGS if s.target} | {
            "run_id": self.run_id
        }

    @property
    def run_dir(self) -> Path:
        """This run's report folder."""
        return self.reports_dir / self.run_id


Lookup = Callable[[Setting], Any]
"""Returns a setting's value from one source, or None when that source does not set it."""


RUN_CONFIG_KEY = pytest.StashKey[RunConfig]()
"""Where the plugin keeps the run's :class:`RunConfig` on pytest's config."""


def run_config(config: pytest.Config) -> RunConfig:
    """The run's checked mo-chaos settings, as the plugin resolved them at configure time
    (for test modules that parametrize from them, such as ``mochaos.explore``)."""
    return config.stash[RUN_CONFIG_KEY]


def resolve(
    *,
    run_id: str,
    option: Lookup,
    ini: Lookup,
    environ: dict[str, str] | None = None,
    seed: Callable[[], int],
) -> RunConfig:
    """Build the run's configuration: option, then environment, then ini, then default.

    UsageError (one line naming the setting and where it came from) for a bad value.
    """
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for s in SETTINGS:
        value, source = _first(s, option, env, ini)
        if source is not None:
            sources[s.name] = source
        if value is not None:
            values[s.name] = value
    if values.get("chaos_seed") is None:
        values["chaos_seed"] = seed()
    cfg = RunConfig(run_id=run_id, sources=sources, **values)
    check_time_scale(cfg.time_scale)
    for name in ("finalize_timeout", "migration_timeout", "operator_ready_timeout"):
        if getattr(cfg, name) <= 0:
            raise UsageError(f"{SETTING_BY_NAME[name].flag} must be > 0", hint="give seconds")
    for name in ("retry_budget", "churn_budget", "conflict_budget"):
        if getattr(cfg, name) < 0:
            raise UsageError(f"{SETTING_BY_NAME[name].flag} must be >= 0", hint="give a count")
    if cfg.registry is not None and cfg.cluster != "kind":
        raise UsageError(
            "--mochaos-registry is for kind's nodes only",
            hint="add --mochaos-cluster=kind, or drop --mochaos-registry",
        )
    if cfg.warm_namespaces < 0:
        raise UsageError(
            "--mochaos-warm-namespaces must be >= 0", hint="give a count (0 turns it off)"
        )
    return cfg


def resolve_one(
    s: Setting, *, option: Lookup, ini: Lookup, environ: dict[str, str] | None = None
) -> Any:
    """One setting's value (option, environment, ini, default); UsageError when bad."""
    value, _ = _first(s, option, os.environ if environ is None else environ, ini)
    return s.default if value is None else value


def _first(s: Setting, option: Lookup, env: dict[str, str], ini: Lookup) -> tuple[Any, str | None]:
    raw = option(s)
    if raw is not None and raw != () and raw is not False:
        return _check_choice(s, raw, s.flag), "option"
    text = env.get(s.env)
    if text is not None and text.strip():
        return _convert(s, text, s.env), "env"
    text = ini(s)
    if text:
        return _convert(s, str(text), s.ini), "ini"
    return None, None


def _convert(s: Setting, text: str, where: str) -> Any:
    try:
        value = s.parse(text.strip())
    except ValueError as err:
        raise UsageError(f"{where}={text!r}: {err}", hint=f"see {s.flag} in --help") from err
    return _check_choice(s, value, where)


def _check_choice(s: Setting, value: Any, where: str) -> Any:
    if s.choices and value not in s.choices:
        raise UsageError(
            f"{where}={value!r} is not one of {', '.join(s.choices)}", hint=f"see {s.flag}"
        )
    return value
