"""The ``python -m mochaos`` command line: clusters (local, kind), qualification and its
history, exploration, merging shards, re-checking a history.

Exit statuses (mochaos.exits, one table for every command and pytest run): 0 ok, 1 the
operator failed a scenario (qualify, merge), a case (explore) or an invariant (check), 2
usage error, 3 infrastructure error, 6 inconclusive only (nothing failed or broke, but
something was not judged). Every error is printed as one line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mochaos import __version__, exits, progress
from mochaos.cluster import PROVIDERS
from mochaos.config import CHECK_SETTINGS
from mochaos.errors import MochaosError, UsageError
from mochaos.operator import parse_target
from mochaos.report import compare
from mochaos.report.rundir import new_run_id

SUITES = Path(__file__).resolve().parent / "suites"
"""The suites shipped with the package."""


def _shard(text: str) -> Any:
    from mochaos.shard import parse_shard  # lazy: fast cli start-up

    try:
        return parse_shard(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of exiting with its own status."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message, hint=f"see `{self.prog} --help`")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m mochaos", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"mo-chaos {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    cl = sub.add_parser("cluster", help="build, start, stop and inspect the local cluster")
    csub = cl.add_subparsers(dest="action", required=True, parser_class=_Parser)
    b = csub.add_parser("build", help="build the control-plane binaries into the cache")
    b.add_argument("--force", action="store_true", help="rebuild even when cached")
    for name, text in (
        ("up", "start the cluster, or reuse a healthy one"),
        ("down", "stop the cluster and remove its data"),
        ("status", "say whether the cluster is running and healthy"),
        ("kubeconfig", "print the path of the cluster's kubeconfig"),
    ):
        a = csub.add_parser(name, help=text)
        a.add_argument(
            "--name",
            default=None,
            help="cluster name (default: $MOCHAOS_CLUSTER_NAME, else mochaos)",
        )

    k = sub.add_parser("kind", help="the kind path: Docker engine, offline node image, cluster")
    ksub = k.add_subparsers(dest="action", required=True, parser_class=_Parser)
    ni = ksub.add_parser(
        "node-image", help="build kind's node image offline (cached by recipe); print its ref"
    )
    ni.add_argument("--force", action="store_true", help="rebuild even when cached")
    ksub.add_parser(
        "images", help="build the images the seed suite needs that no registry serves here"
    )
    e = ksub.add_parser("engine", help="start/stop a Docker daemon with this host's workarounds")
    e.add_argument("state", choices=("up", "down", "status"))
    for name, text in (
        ("up", "create the kind cluster, or reuse a running one"),
        ("down", "delete the kind cluster"),
    ):
        ksub.add_parser(name, help=text)

    q = sub.add_parser("qualify", help="run the suites N times and give a verdict")
    q.add_argument(
        "--operator",
        required=True,
        action="append",
        help="operator target, e.g. model:upstream; give it twice or more to compare targets "
        "side by side",
    )
    q.add_argument(
        "--cluster", default="local", choices=PROVIDERS, help="cluster provider (default: local)"
    )
    q.add_argument("--repeat", type=int, default=3, help="runs per scenario (default: 3)")
    q.add_argument("-k", dest="keyword", default=None, help="pytest -k expression")
    q.add_argument(
        "--suites",
        type=Path,
        default=SUITES,
        help="suites directory (default: packaged)",
    )
    q.add_argument("--reports-dir", type=Path, default=Path("reports"), help="output root")
    q.add_argument("--history", type=Path, default=None,
                   help="a history store: append each qualification (one JSON file) and "
                   "render its grid.html across builds")  # fmt: skip
    q.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")

    e = sub.add_parser(
        "explore", help="learn a workload's injection points and run a fault at each"
    )
    e.add_argument("--operator", help="operator target, e.g. model:upstream")
    e.add_argument("--workload", help="named workload: " + ", ".join(_workloads()))
    e.add_argument("--faults", default="", help="fault kinds, comma-separated (default: all)")
    e.add_argument("--budget", type=int, default=None, help="cases to run at most (default: all)")
    e.add_argument("--repeat", type=int, default=1, help="runs of each smallest failing case")
    e.add_argument("--depth", type=int, default=1, choices=(1, 2), help="2: pairs and shrinking")
    e.add_argument("-n", dest="workers", type=int, default=2, help="cases at once (default: 2)")
    e.add_argument("--resume", type=Path, default=None, help="an exploration.json to go on from")
    e.add_argument("--time-scale", type=float, default=1.0, help="model targets: time scale")
    e.add_argument(
        "--cluster", default="local", choices=PROVIDERS, help="cluster provider (default: local)"
    )
    e.add_argument("--reports-dir", type=Path, default=Path("reports"), help="output root")
    e.add_argument(
        "--learn-only",
        action="store_true",
        help="stop after the learn run: its exploration.json is what shards resume",
    )
    e.add_argument("--shard", type=_shard, default=None, metavar="I/N",
                   help="with --resume: run only shard I of N of the matrix (merge the "
                   "shards' explorations with `merge`)")  # fmt: skip
    e.add_argument(
        "--report", type=Path, default=None, metavar="EXPLORATION",
        help="render an exploration.json's matrix as HTML (next to it) and print its summary",
    )  # fmt: skip
    e.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    m = sub.add_parser("merge", help="merge shards' report folders into one run folder, or "
                       "shards' explorations into one exploration")  # fmt: skip
    m.add_argument("reports", nargs="+", type=Path,
                   help="the shards' report folders (or their exploration.json files)")  # fmt: skip
    m.add_argument("--out", type=Path, default=Path("merged"),
                   help="the merged run folder: summary.json, index.html, junit.xml "
                   "(default: ./merged)")  # fmt: skip

    h = sub.add_parser("history", help="read a history store of qualifications")
    hsub = h.add_subparsers(dest="action", required=True, parser_class=_Parser)
    for name, text in (
        ("grid", "render <store>/grid.html again"),
        ("last-good", "print the target of the newest build that passed every scenario "
         "(nothing when none did)"),
    ):  # fmt: skip
        hsub.add_parser(name, help=text).add_argument("store", type=Path, help="history store")

    c = sub.add_parser("check", help="re-judge a saved history.jsonl[.gz] with every invariant")
    c.add_argument("history", type=Path, help="a test's history.jsonl (or .jsonl.gz)")
    for setting in CHECK_SETTINGS:
        c.add_argument(setting.flag, type=setting.parse, help=f"override the run's: {setting.help}")
    return p


def _cluster(args: argparse.Namespace) -> int:
    from mochaos.binaries import (  # lazy: fast cli start-up; pulls the binaries' build code
        control_plane,
    )
    from mochaos.cluster.local.local_provider import (  # lazy: fast cli start-up; local provider
        LocalProvider,
    )

    if args.action == "build":
        control_plane.build(force=args.force)
        return 0
    provider = LocalProvider(name=args.name)
    if args.action == "up":
        cluster = provider.up()
        print(cluster.kubeconfig)
    elif args.action == "down":
        provider.down()
    elif args.action == "status":
        print(provider.status())
        return 0 if provider.is_healthy() else 3
    elif args.action == "kubeconfig":
        print(provider.kubeconfig_path())
    return 0


def _kind(args: argparse.Namespace) -> int:
    from mochaos.cluster.kind import engine_host  # lazy: fast cli start-up; tenacity, the host

    if args.action == "engine":
        if args.state == "up":
            engine_host.up()
        elif args.state == "down":
            engine_host.down()
        else:
            print(engine_host.status())
            return 0 if engine_host.answers() else 3
        return 0
    from mochaos.cluster.kind.kind_provider import (  # lazy: fast cli start-up; kind provider
        KindProvider,
    )

    provider = KindProvider(keep_cluster=True)
    if args.action == "node-image":
        print(provider.offline_node_image(force=args.force))
    elif args.action == "images":
        from mochaos.images import minio  # lazy: fast cli start-up; pulls the image builders
        from mochaos.matrixone.topology import (  # lazy: fast cli start-up; image builders
            DEFAULT_MO_IMAGE,
        )
        from mochaos.operator.provenance.helm import (  # lazy: fast cli start-up; Helm, kruise
            KRUISE_IMAGE,
        )

        # The upstream images the seed suite needs besides the operator's own.
        for ref in (KRUISE_IMAGE, DEFAULT_MO_IMAGE):
            provider.obtain(ref)
            print(ref)
        print(minio.ensure_image(provider.docker_cli()))
    elif args.action == "up":
        print(provider.up().kubeconfig)
    else:
        provider.keep_cluster = False
        provider.down()
    return 0


def _qualify(args: argparse.Namespace) -> int:
    import json
    import re

    from mochaos.operator.leftovers import (  # lazy: fast cli start-up; pulls the sweep, reports
        sweep,
    )

    # A bad target is a usage error (exit 2) before any run, not N errored runs (exit 3).
    for spec in args.operator:
        parse_target(spec, {"cluster": args.cluster})
    # Targets run one after another on one cluster: nothing of one may be left for the next.
    print(f"qualify: {sweep(f'before {args.operator[0]}', provider=args.cluster).line()}",
          flush=True)  # fmt: skip

    def after(spec: str) -> Callable[[], dict[str, Any]]:
        return lambda: sweep(f"after {spec}", provider=args.cluster).to_dict()

    if len(args.operator) == 1:
        code, _ = _qualify_one(args, args.operator[0], args.reports_dir, after(args.operator[0]))
        _write_history(args)
        return code
    out = args.reports_dir / f"compare-{new_run_id()}"
    codes, reports = [], []
    for i, spec in enumerate(args.operator, 1):
        root = out / f"{i}-{re.sub(r'[^A-Za-z0-9._-]+', '_', spec)[:60]}"
        root.mkdir(parents=True)
        code, qdir = _qualify_one(args, spec, root, after(spec))
        codes.append(code)
        reports.append(json.loads((qdir / "qualification.json").read_text()))
    table = compare.write(out, reports)
    print(table.read_text(), end="")
    print(f"qualify: comparison {table}", flush=True)
    _write_history(args)
    return exits.worst(codes)


def _workloads() -> list[str]:
    from mochaos.scenario import (  # lazy: plugin imports cli; pulls the scenario engine
        WORKLOADS,
    )

    return list(WORKLOADS)


def _explore(args: argparse.Namespace) -> int:
    from mochaos.explore import command, report  # lazy: fast cli start-up; the explore engine
    from mochaos.explore.matrix import (  # lazy: fast cli start-up; pulls the explore engine
        parse_fault_kinds,
    )
    from mochaos.explore.plan import load  # lazy: fast cli start-up; pulls the explore engine
    from mochaos.explore.signatures import (  # lazy: fast cli start-up; pulls the explore engine
        group,
    )

    if args.report is not None:
        exploration = load(args.report)
        page = report.write_html(exploration, args.report.with_name(command.REPORT_FILE))
        print(report.summary(exploration, group(exploration)))
        print(f"explore: matrix {page}")
        return 0
    if not args.operator or not args.workload:
        raise UsageError(
            "explore needs --operator and --workload",
            hint="e.g. explore --operator model:upstream --workload migration",
        )
    settings = command.Settings(
        operator=args.operator, workload=args.workload, faults=parse_fault_kinds(args.faults),
        budget=args.budget, repeat=args.repeat, depth=args.depth, workers=args.workers,
        resume=args.resume, out_root=args.reports_dir, cluster=args.cluster,
        time_scale=args.time_scale, extra_args=tuple(args.pytest_args), shard=args.shard,
        learn_only=args.learn_only,
    )  # fmt: skip
    return command.explore(settings)


def _qualify_one(
    args: argparse.Namespace, spec: str, root: Path, after_runs: Callable[[], dict[str, Any]]
) -> tuple[int, Path]:
    """Qualify ``spec`` into ``root``; (exit status, its qualification folder), appended to
    ``--history`` when given. ``after_runs`` sweeps the cluster once the target's runs end."""
    from mochaos.report import build_history  # lazy: fast cli start-up; report writers
    from mochaos.report.qualify import qualify  # lazy: fast cli start-up; pulls the report writers

    before = set(root.glob("qual-*"))
    code = qualify(
        operator=spec, cluster=args.cluster, repeat=args.repeat, keyword=args.keyword,
        suites=args.suites, out_root=root, extra_args=list(args.pytest_args),
        after_runs=after_runs,
    )  # fmt: skip
    (qdir,) = set(root.glob("qual-*")) - before
    if args.history is not None:
        print(f"qualify: history {build_history.append(args.history, qdir)}", flush=True)
    return code, qdir


def _write_history(args: argparse.Namespace) -> None:
    if args.history is not None:
        from mochaos.report.grid import (  # lazy: fast cli start-up; pulls the report writers
            write_grid,
        )

        print(f"qualify: grid {write_grid(args.history)}", flush=True)


def _history(args: argparse.Namespace) -> int:
    from mochaos.report import build_history  # lazy: fast cli start-up; report writers
    from mochaos.report.grid import write_grid  # lazy: fast cli start-up; pulls the report writers

    if args.action == "grid":
        print(write_grid(args.store))
        return 0
    good = build_history.last_good(build_history.load(args.store))
    if good is None:
        print(f"mo-chaos: no build in {args.store} passed every scenario yet", file=sys.stderr)
    else:
        print(good["target"])
    return 0


def _check(args: argparse.Namespace) -> int:
    from mochaos.report.recheck import (  # lazy: plugin imports cli; pulls the invariants
        options_line,
        recheck,
        verdict_line,
    )

    history, verdicts, options, origin = recheck(
        args.history, {s.name: getattr(args, s.name) for s in CHECK_SETTINGS}
    )
    print(options_line(options, origin), file=sys.stderr)
    for verdict in verdicts:
        print(verdict_line(verdict, history.start))
    if any(v.failed for v in verdicts):
        return exits.OPERATOR_FAILED
    missed = [a for a in history.actions() if a.in_window is False]
    for action in missed:
        print(f"INCONCLUSIVE: {action.action} {action.kind}/{action.name} missed its window")
    return exits.INCONCLUSIVE if missed else exits.OK


def _merge(args: argparse.Namespace) -> int:
    from mochaos.report.merge import (  # lazy: fast cli start-up; pulls the report writers
        exit_status,
        merge,
    )
    from mochaos.report.result import (  # lazy: plugin imports cli; pulls the invariants
        ScenarioResult,
    )
    from mochaos.report.summary import (  # lazy: plugin imports cli; pulls the invariants
        read_results,
        terminal_line,
    )

    explorations = [
        p for p in args.reports if p.name == "exploration.json" or (p / "exploration.json").exists()
    ]
    if explorations:
        from mochaos.explore import command  # lazy: fast cli start-up; pulls the explore engine

        if len(explorations) != len(args.reports):
            raise UsageError("merge explorations with explorations only",
                             hint="give each shard's exploration.json (or its folder)")  # fmt: skip
        return command.merge(explorations, args.out)
    summary = merge(list(args.reports), args.out)
    for data in read_results(args.out):
        result = ScenarioResult.from_dict(data)
        timeline = result.artifacts.get("timeline_md")
        print(terminal_line(result, Path(timeline) if timeline else None))
    code = exit_status(summary)
    print(f"merge: exit {code}; {args.out / 'index.html'}, {summary}, {args.out / 'junit.xml'}")
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status."""
    # Long steps (builds, cluster start, doubles) report through the mochaos logger.
    sink = progress.install(progress.Sink(sys.stderr, verbose=True, clock=False))
    try:
        args = _parser().parse_args(argv)
        if args.command == "cluster":
            return _cluster(args)
        if args.command == "check":
            return _check(args)
        if args.command == "kind":
            return _kind(args)
        if args.command == "explore":
            return _explore(args)
        if args.command == "merge":
            return _merge(args)
        if args.command == "history":
            return _history(args)
        return _qualify(args)
    except MochaosError as err:
        print(f"mo-chaos: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("mo-chaos: interrupted", file=sys.stderr)
        return 130
    finally:
        progress.uninstall(sink)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
