"""The ``python -m mochaos`` command line: cluster lifecycle, qualification, exploration,
re-checking.

Exit statuses: 0 ok, 1 the operator failed a scenario (qualify), a case (explore) or an
invariant (check), 2 usage error, 3 infrastructure error. Every error is printed as one line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mochaos import __version__
from mochaos.cluster import PROVIDERS
from mochaos.errors import MochaosError, UsageError

SUITES = Path(__file__).resolve().parent / "suites"
"""The suites shipped with the package."""


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
        "--report", type=Path, default=None, metavar="EXPLORATION",
        help="render an exploration.json's matrix as HTML (next to it) and print its summary",
    )  # fmt: skip
    e.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")

    c = sub.add_parser("check", help="re-judge a saved history.jsonl[.gz] with every invariant")
    c.add_argument("history", type=Path, help="a test's history.jsonl (or .jsonl.gz)")
    c.add_argument("--time-scale", type=float, help="override the run's time scale")
    c.add_argument("--finalize-timeout", type=float, help="override (operator seconds)")
    c.add_argument("--retry-budget", type=int, help="override (finalize retries per window)")
    c.add_argument("--migration-timeout", type=float, help="override (operator seconds)")
    return p


def _cluster(args: argparse.Namespace) -> int:
    from mochaos.cluster import build, local

    if args.action == "build":
        build.build(force=args.force)
        return 0
    provider = local.LocalProvider(name=args.name)
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


def _qualify(args: argparse.Namespace) -> int:
    import json
    import re

    from mochaos.operator import parse_target
    from mochaos.report import compare
    from mochaos.report.qualify import qualify
    from mochaos.report.rundir import new_run_id

    # A bad target is a usage error (exit 2) before any run, not N errored runs (exit 3).
    for spec in args.operator:
        parse_target(spec, {"cluster": args.cluster})
    if len(args.operator) == 1:
        return qualify(
            operator=args.operator[0], cluster=args.cluster, repeat=args.repeat,
            keyword=args.keyword, suites=args.suites, out_root=args.reports_dir,
            extra_args=list(args.pytest_args),
        )  # fmt: skip
    out = args.reports_dir / f"compare-{new_run_id()}"
    codes, reports = [], []
    for i, spec in enumerate(args.operator, 1):
        root = out / f"{i}-{re.sub(r'[^A-Za-z0-9._-]+', '_', spec)[:60]}"
        root.mkdir(parents=True)
        codes.append(qualify(
            operator=spec, cluster=args.cluster, repeat=args.repeat, keyword=args.keyword,
            suites=args.suites, out_root=root, extra_args=list(args.pytest_args),
        ))  # fmt: skip
        reports += [json.loads(p.read_text()) for p in root.glob("qual-*/qualification.json")]
    table = compare.write(out, reports)
    print(table.read_text(), end="")
    print(f"qualify: comparison {table}", flush=True)
    return compare.worst(codes)


def _workloads() -> list[str]:
    from mochaos.scenario.workloads import WORKLOADS

    return list(WORKLOADS)


def _explore(args: argparse.Namespace) -> int:
    from mochaos.explore import report, runner
    from mochaos.explore.faults import parse_fault_kinds
    from mochaos.explore.plan import load
    from mochaos.explore.signatures import group

    if args.report is not None:
        exploration = load(args.report)
        page = report.write_html(exploration, args.report.with_name(runner.REPORT_FILE))
        print(report.summary(exploration, group(exploration)))
        print(f"explore: matrix {page}")
        return 0
    if not args.operator or not args.workload:
        raise UsageError(
            "explore needs --operator and --workload",
            hint="e.g. explore --operator model:upstream --workload migration",
        )
    settings = runner.Settings(
        operator=args.operator, workload=args.workload, faults=parse_fault_kinds(args.faults),
        budget=args.budget, repeat=args.repeat, depth=args.depth, workers=args.workers,
        resume=args.resume, out_root=args.reports_dir, cluster=args.cluster,
        time_scale=args.time_scale, extra_args=tuple(args.pytest_args),
    )  # fmt: skip
    return runner.explore(settings)


def _check(args: argparse.Namespace) -> int:
    from mochaos.report.recheck import options_line, recheck, verdict_line

    history, verdicts, options, origin = recheck(
        args.history,
        time_scale=args.time_scale,
        finalize_timeout=args.finalize_timeout,
        retry_budget=args.retry_budget,
        migration_timeout=args.migration_timeout,
    )
    print(options_line(options, origin), file=sys.stderr)
    for verdict in verdicts:
        print(verdict_line(verdict, history.start))
    return 1 if any(v.failed for v in verdicts) else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status."""
    from mochaos import progress

    # Long steps (builds, cluster start, doubles) report through the mochaos logger.
    sink = progress.install(progress.Sink(sys.stderr, verbose=True, clock=False))
    try:
        args = _parser().parse_args(argv)
        if args.command == "cluster":
            return _cluster(args)
        if args.command == "check":
            return _check(args)
        if args.command == "explore":
            return _explore(args)
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
