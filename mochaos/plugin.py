"""The pytest plugin: options and hooks that wire pytest to the layers below.

Options come from :mod:`mochaos.config` (one table: option, ini key, environment
variable, default), checked once in ``pytest_configure``. A scenario test's end is its
fixture's: the set-up and call wrappers conclude the scenario the ``scenario`` fixture
stashed (when the body returns: whichever of settle, epilogue, verdict the test did not
run), and the report hooks only translate the one result that makes
(:mod:`mochaos.scenario_reports`) into pytest's outcome, the JUnit properties, one terminal
line per scenario and the run's exit status (:mod:`mochaos.exits`, from the same
``summary.json`` that ``merge`` reads). The fixtures are :mod:`mochaos.fixtures`', exposed
here.
"""

from __future__ import annotations

import argparse
import json
import secrets
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from mochaos import exits, progress
from mochaos.cli import SUITES
from mochaos.config import (
    RUN_CONFIG_KEY,
    SETTING_BY_NAME,
    SETTINGS,
    RunConfig,
    default_workers,
    resolve,
    resolve_one,
    run_config,
)
from mochaos.errors import Inconclusive, MochaosError, UsageError
from mochaos.fixtures import (  # noqa: F401  (pytest finds a plugin's fixtures among its names)
    cluster,
    cluster_provider,
    kube,
    make_provider,
    mochaos,
    namespace,
    operator,
    operator_target,
    recorder,
    remove_kind_after_workers,
    scenario,
)
from mochaos.operator import parse_target
from mochaos.paths import state_dir
from mochaos.report.rundir import new_run_id
from mochaos.scenario_reports import ERROR_ATTR, conclude, translate, write_once
from mochaos.shard import select

SINK_KEY = pytest.StashKey[progress.Sink]()
FOLLOWER_KEY = pytest.StashKey[progress.Follower]()
SIGINT_KEY = pytest.StashKey[Any]()
MODEL_TARGET_KEY = pytest.StashKey[bool]()
"""Whether the run's target is the reference model (model_only scenarios run only there)."""
MATRIXONE_KEY = pytest.StashKey[tuple[str, ...]]()
"""The MatrixOne components the target can make unreachable (the ``matrixone`` marker)."""


# -- options and configuration ---------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register every mo-chaos setting as an option and an ini key (see mochaos.config)."""
    groups = {
        "run": parser.getgroup("mochaos", "mo-chaos: chaos tests of the MatrixOne operator"),
        "kind": parser.getgroup("mochaos-kind", "mo-chaos: the kind path"),
    }
    for s in SETTINGS:
        help_text = f"{s.help} [ini {s.ini}, env {s.env}]"
        if s.switch:
            groups[s.group].addoption(s.flag, action="store_true", default=False, help=help_text)
        elif s.repeat:
            groups[s.group].addoption(s.flag, action="append", default=[], help=help_text)
        else:
            groups[s.group].addoption(
                s.flag, default=None, help=help_text, choices=s.choices or None,
                type=None if s.parse is str else _option_type(s.parse),
            )  # fmt: skip
        parser.addini(s.ini, help=s.help, default=None)


def _option_type(parse: Any) -> Any:
    """``parse`` for argparse: its ValueError's message is the one line pytest prints."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    return convert


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Any:
    """Run the suites' scenarios concurrently by default: they wait far more than they
    compute. ``-n`` (``-n 0`` for one at a time) or ``-p no:xdist`` keep the user's choice."""
    if (
        getattr(config.option, "numprocesses", "absent") is None
        and getattr(config, "workerinput", None) is None
        and not config.getoption("collectonly")
        and _runs_suites(config)
    ):
        try:
            workers = _setting_now(config, "workers") or default_workers(
                _setting_now(config, "cluster")
            )
        except UsageError:
            workers = 0  # pytest_configure reports the bad value
        if workers and workers > 1:
            config.option.numprocesses = workers
    return (yield)


def _runs_suites(config: pytest.Config) -> bool:
    """True when the run collects (some of) the packaged suites."""
    suites = SUITES.resolve()
    for arg in config.args:
        target = arg.split("::", 1)[0]
        if config.option.pyargs and target.startswith("mochaos.suites"):
            return True
        path = (Path(config.invocation_params.dir) / target).resolve()
        if path == suites or suites in path.parents:
            return True
    return False


def _setting_now(config: pytest.Config, name: str) -> Any:
    """One setting read before ``pytest_configure`` (option, environment, ini, default)."""
    return resolve_one(
        SETTING_BY_NAME[name], option=lambda s: _option(config, s),
        ini=lambda s: config.getini(s.ini),
    )  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    """Read and check the settings once (bad input: one line, exit 4), register markers."""
    config.addinivalue_line("markers", "scenario: a chaos scenario against an operator target")
    config.addinivalue_line(
        "markers", "model_only(reason): needs the reference model; skipped on real operators"
    )
    config.addinivalue_line(
        "markers",
        "matrixone(*components): makes these MatrixOne components unreachable (hakeeper, "
        "lockservice, query); skipped on targets that cannot",
    )
    config.addinivalue_line(
        "markers",
        "interposer: holds, fails or steers the operator's requests (interposer faults); "
        "skipped when its operator talks to the apiserver directly",
    )
    workerinput = getattr(config, "workerinput", None)
    run_id = workerinput["mochaos_run_id"] if workerinput else _new_run_id()
    try:
        cfg = resolve(
            run_id=run_id,
            option=lambda s: _option(config, s),
            ini=lambda s: config.getini(s.ini),
            seed=lambda: secrets.randbelow(2**31),
        )
        if workerinput:
            cfg = _with_seed(cfg, workerinput["mochaos_seed"])

        target = parse_target(cfg.operator, cfg.target_options())
        config.stash[MODEL_TARGET_KEY] = target.time_scaled
        config.stash[MATRIXONE_KEY] = tuple(target.matrixone_components)
        make_provider(cfg)  # reads the kubeconfig and checks the allow-list; no connection
    except UsageError as err:
        raise pytest.UsageError(f"mo-chaos: {err}") from None
    except MochaosError as err:  # e.g. the remote of a source:<git URL> cannot be reached
        pytest.exit(f"mo-chaos: {err}", returncode=err.exit_code)
    config.stash[RUN_CONFIG_KEY] = cfg
    if workerinput is None:
        config.pluginmanager.register(_SummaryFollower(config), "mochaos-summary")
    _start_progress(config, cfg, worker=workerinput is not None)
    if threading.current_thread() is threading.main_thread():
        config.stash[SIGINT_KEY] = signal.signal(signal.SIGINT, _on_sigint)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Restore the SIGINT handler and stop the progress output."""
    previous = config.stash.get(SIGINT_KEY, None)
    if previous is not None:
        signal.signal(signal.SIGINT, previous)
    follower = config.stash.get(FOLLOWER_KEY, None)
    if follower is not None:
        follower.stop()
    sink = config.stash.get(SINK_KEY, None)
    if sink is not None:
        progress.uninstall(sink)


def _option(config: pytest.Config, s: Any) -> Any:
    value = config.getoption(s.flag.lstrip("-").replace("-", "_"))
    return tuple(w for v in value for w in v.replace(",", " ").split()) if s.repeat else value


def _with_seed(cfg: RunConfig, seed: int) -> RunConfig:
    from dataclasses import replace

    return replace(cfg, chaos_seed=seed)


def _new_run_id() -> str:
    return new_run_id()


def _progress_file(cfg: RunConfig) -> Path:
    return state_dir() / "runs" / f"{cfg.run_id}.progress"


def _start_progress(config: pytest.Config, cfg: RunConfig, *, worker: bool) -> None:
    """Live lines: to the terminal, or from a worker through a file the controller follows."""
    verbose = config.getoption("capture") == "no" or config.getoption("verbose") > 0
    if worker:
        path = _progress_file(cfg)
        path.parent.mkdir(parents=True, exist_ok=True)
        stream = path.open("a", encoding="utf-8", buffering=1)
        wid = config.workerinput["workerid"]  # type: ignore[attr-defined]
        sink = progress.Sink(stream, prefix=f" [{wid}]", verbose=verbose)
    else:
        sink = progress.Sink(progress.terminal_stream(), verbose=verbose)
        if (getattr(config.option, "numprocesses", None) or 0) not in (0, None):
            follower = progress.Follower(_progress_file(cfg), progress.terminal_stream())
            follower.start()
            config.stash[FOLLOWER_KEY] = follower
    # With live logging on, pytest prints our records itself.
    if config.getoption("log_cli_level", None) and not worker:
        sink.setLevel(progress.logging.CRITICAL + 1)
    config.stash[SINK_KEY] = progress.install(sink)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Give every xdist worker the controller's run id and seed."""
    cfg = run_config(node.config)
    node.workerinput["mochaos_run_id"] = cfg.run_id
    node.workerinput["mochaos_seed"] = cfg.chaos_seed


# -- Ctrl-C ------------------------------------------------------------------------------

_INTERRUPTED = threading.Event()
"""Set by Ctrl-C. A library may swallow the KeyboardInterrupt (the kubernetes client's
pydantic-core validators, built on each API method's first call, drop one raised while
they build), so the plugin raises it again at the end of each test phase."""


def _on_sigint(signum: int, frame: object) -> None:
    _INTERRUPTED.set()
    raise KeyboardInterrupt


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    """Record the test's phases from its set-up on; re-raise a swallowed Ctrl-C."""
    progress.begin_test(item.nodeid)
    marker = item.get_closest_marker("model_only")
    if marker is not None and not item.config.stash.get(MODEL_TARGET_KEY, True):
        reason = marker.args[0] if marker.args else "it needs the reference model"
        pytest.skip(f"model only ({reason}); the target is {run_config(item.config).operator}")
    needs = item.get_closest_marker("matrixone")
    can = item.config.stash.get(MATRIXONE_KEY, ())
    missing = [c for c in (needs.args if needs is not None else ()) if c not in can]
    if missing:
        pytest.skip(f"the target {run_config(item.config).operator} cannot make MatrixOne's "
                    f"{', '.join(missing)} unreachable")  # fmt: skip
    if item.get_closest_marker("interposer") is not None:
        from mochaos.operator.runtime.via_interposer import interposed  # lazy: light plugin

        cfg = run_config(item.config)
        if not interposed(cfg.cluster, cfg.interposer):
            pytest.skip(f"it needs the operator's interposer, which runs on the local cluster "
                        f"with --mochaos-interposer on (this run: --mochaos-cluster "
                        f"{cfg.cluster}, --mochaos-interposer {cfg.interposer})")  # fmt: skip
    try:
        return (yield)
    except BaseException as exc:
        conclude(item, exc)  # a scenario whose set-up broke, or one that never started
        raise
    finally:
        if _INTERRUPTED.is_set():
            raise KeyboardInterrupt


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Any:
    """Conclude the test's scenario right after its body (still the test's call, so its
    outcome is the verdict's); re-raise a Ctrl-C a library swallowed during the test."""
    try:
        outcome = yield
    except BaseException as exc:
        conclude(item, exc)
        raise
    finally:
        if _INTERRUPTED.is_set():
            raise KeyboardInterrupt
    conclude(item, None)
    if _INTERRUPTED.is_set():
        raise KeyboardInterrupt
    return outcome


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Any:
    """Once every fixture is torn down: write the test's result (with the teardown's
    findings) and summarise its phases in its report."""
    try:
        return (yield)
    finally:
        write_once(item)
        log = progress.end_test()
        if log is not None and log.records:
            item.add_report_section("teardown", "mo-chaos phases", log.summary())


# -- outcomes ----------------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A scenario test's report says what its result says (:func:`translate`). Elsewhere an
    infrastructure or usage error is an error (with the phase it happened in) and
    Inconclusive a skip, never a failure."""
    report = yield
    exc = call.excinfo.value if call.excinfo is not None else None
    if isinstance(exc, MochaosError):
        kind = "usage error" if isinstance(exc, UsageError) else "infrastructure error"
        where = getattr(exc, "mochaos_phase", None) or progress.current_phase()
        report.longrepr = f"mo-chaos {kind} in phase '{where}': {exc}"
        setattr(report, ERROR_ATTR, where)
    elif isinstance(exc, Inconclusive):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"INCONCLUSIVE: {exc}")
    translate(item, report)
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """A mo-chaos error in the test's call shows as an error, not as a failure."""
    if report.when == "call" and report.failed and getattr(report, ERROR_ATTR, None):
        return "error", "E", "ERROR"
    return None


class _SummaryFollower:
    """Keeps the run's summary.json up to date after each finished test, so a killed run
    keeps its summary up to the last test that ended (registered in the controller only:
    it alone writes the summary)."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Merge the results once a test's teardown (its last write) is over."""
        if report.when == "teardown":
            _merge_summary(self._config)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--mochaos-shard i/n``: keep this shard's share of what -k/-m left (mochaos.shard)."""
    cfg = config.stash.get(RUN_CONFIG_KEY, None)
    if cfg is None or cfg.shard is None:
        return

    keep = select([item.nodeid for item in items], cfg.shard)
    dropped = [item for item in items if item.nodeid not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item.nodeid in keep]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller merges every test's result into the run's summary.json and index, and
    exits by the one table (:mod:`mochaos.exits`) from its counts: an infrastructure error
    is 3, not pytest's 1 of a failure; a run that only judged nothing is 6, not 0.

    A shard that no scenario fell to ran nothing by design: it exits 0, not 5."""
    if getattr(session.config, "workerinput", None) is not None:
        return
    cfg = session.config.stash.get(RUN_CONFIG_KEY, None)
    if cfg is not None and cfg.shard and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        progress.announce(f"shard {cfg.shard}: no scenario of this selection fell to this shard")
        session.exitstatus = pytest.ExitCode.OK
    summary = _merge_summary(session.config)
    if cfg is not None and summary is not None and _with_workers(session.config):
        remove_kind_after_workers(cfg)
    decided = (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
    if summary is not None and session.exitstatus in decided:
        status = exits.of_summary(summary, usage=exits.PYTEST_USAGE)
        if status != exits.OK:
            session.exitstatus = status


def _with_workers(config: pytest.Config) -> bool:
    """Whether this (controller) process ran the tests in xdist workers."""
    return config.pluginmanager.getplugin("dsession") is not None


def _merge_summary(config: pytest.Config) -> dict[str, Any] | None:
    """Merge the run's summary.json (None when this run has no scenario result)."""
    cfg = config.stash.get(RUN_CONFIG_KEY, None)
    if cfg is None or not cfg.run_dir.is_dir():
        return None
    from mochaos.report.index import write_index  # lazy: light plugin load; pulls the invariants
    from mochaos.report.summary import (  # lazy: light plugin load; pulls the invariants
        merge_summary,
        read_results,
    )

    results = read_results(cfg.run_dir)
    if not results:
        return None
    first = results[0]
    path = merge_summary(
        cfg.run_dir,
        meta={
            "operator_target": cfg.operator,
            "operator_version": first.get("operator_version", ""),
            "cluster_provider": cfg.cluster,
            "k8s_version": first.get("k8s_version", ""),
            "seed": str(cfg.chaos_seed),
        },
    )
    write_index(cfg.run_dir, title=f"mo-chaos run {cfg.run_id} — {cfg.operator}")
    return json.loads(path.read_text(encoding="utf-8"))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """One line per scenario: outcome, failed invariants, max finalize retries, timeline."""
    cfg = config.stash.get(RUN_CONFIG_KEY, None)
    if cfg is None or not cfg.run_dir.is_dir():
        return
    from mochaos.report.result import (  # lazy: light plugin load; pulls the invariants
        ScenarioResult,
    )
    from mochaos.report.summary import (  # lazy: light plugin load; pulls the invariants
        read_results,
        terminal_line,
    )

    results = read_results(cfg.run_dir)
    if not results:
        return
    terminalreporter.section("mo-chaos verdicts")
    for data in results:
        result = ScenarioResult.from_dict(data)
        timeline = result.artifacts.get("timeline_md")
        terminalreporter.write_line(terminal_line(result, Path(timeline) if timeline else None))
    terminalreporter.write_line(f"reports: {cfg.run_dir / 'index.html'} (seed {cfg.chaos_seed})")
