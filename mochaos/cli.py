"""The ``python -m mochaos`` command line: cluster lifecycle, qualification, re-checking.

Exit statuses: 0 ok, 1 the operator failed a scenario (qualify) or an invariant
(check), 2 usage error, 3 infrastructure error. Every error is printed as one line.
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
    from mochaos.operator.leftovers import sweep
    from mochaos.report import compare
    from mochaos.report.qualify import qualify
    from mochaos.report.rundir import new_run_id

    # A bad target is a usage error (exit 2) before any run, not N errored runs (exit 3).
    for spec in args.operator:
        parse_target(spec, {"cluster": args.cluster})
    # Targets run one after another on one cluster: nothing of one may be left for the next.
    print(f"qualify: {sweep(f'before {args.operator[0]}', provider=args.cluster).line()}",
          flush=True)  # fmt: skip

    def after(spec: str):
        return lambda: sweep(f"after {spec}", provider=args.cluster).to_dict()

    if len(args.operator) == 1:
        return qualify(
            operator=args.operator[0], cluster=args.cluster, repeat=args.repeat,
            keyword=args.keyword, suites=args.suites, out_root=args.reports_dir,
            extra_args=list(args.pytest_args), after_runs=after(args.operator[0]),
        )  # fmt: skip
    out = args.reports_dir / f"compare-{new_run_id()}"
    codes, reports = [], []
    for i, spec in enumerate(args.operator, 1):
        root = out / f"{i}-{re.sub(r'[^A-Za-z0-9._-]+', '_', spec)[:60]}"
        root.mkdir(parents=True)
        codes.append(qualify(
            operator=spec, cluster=args.cluster, repeat=args.repeat, keyword=args.keyword,
            suites=args.suites, out_root=root, extra_args=list(args.pytest_args),
            after_runs=after(spec),
        ))  # fmt: skip
        reports += [json.loads(p.read_text()) for p in root.glob("qual-*/qualification.json")]
    table = compare.write(out, reports)
    print(table.read_text(), end="")
    print(f"qualify: comparison {table}", flush=True)
    return compare.worst(codes)


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
