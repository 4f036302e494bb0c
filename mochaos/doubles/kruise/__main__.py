"""``python -m mochaos.doubles.kruise --kubeconfig K [--state-dir D]``: run the kruise
double in the foreground until SIGTERM/SIGINT; JSON log lines on stdout."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from mochaos.doubles.kruise import crds, heartbeat
from mochaos.doubles.kruise.api import Api, ApiError
from mochaos.doubles.kruise.controller import Controller, Options
from mochaos.doubles.kruise.logs import Log
from mochaos.errors import InfraError, MochaosError


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line."""
    p = argparse.ArgumentParser(
        prog="python -m mochaos.doubles.kruise",
        description="OpenKruise CloneSet / Advanced StatefulSet double for the embedded cluster",
    )
    p.add_argument("--kubeconfig", type=Path, required=True, help="cluster to serve")
    p.add_argument("--state-dir", type=Path, help="folder for the heartbeat file")
    p.add_argument("--workers", type=int, default=2, help="parallel reconciles (default 2)")
    p.add_argument(
        "--no-volume-binder",
        action="store_true",
        help="do not bind class-less Pending PVCs to hostPath volumes",
    )
    p.add_argument(
        "--no-install-crds", action="store_true", help="do not install our CRDs at start"
    )
    p.add_argument(
        "--code",
        metavar="DIGEST",
        help="digest of the double's code, set by mo-chaos (unused: it tells an outdated "
        "double apart on the command line)",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run until signalled; exit status 0, 2 (usage) or 3 (infrastructure)."""
    args = parse_args(argv)
    log = Log()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if args.state_dir is not None:
        args.state_dir.mkdir(parents=True, exist_ok=True)
    try:
        api = Api(args.kubeconfig)
        if not args.no_install_crds:
            crds.ensure(api, log.with_values(controller="crds"))
        controller = Controller(
            api, log, Options(workers=args.workers, bind_volumes=not args.no_volume_binder)
        )
        controller.start()
    except MochaosError as err:
        print(f"kruise double: {err}", file=sys.stderr)
        return err.exit_code
    except ApiError as err:
        print(f"kruise double: {InfraError(f'apiserver: {err}')}", file=sys.stderr)
        return InfraError.exit_code
    if args.state_dir is not None:
        path = heartbeat.heartbeat_path(args.state_dir)
        heartbeat.keep_beating(path, lambda: (controller.synced, controller.errors), stop)
    stop.wait()
    gone = args.state_dir is not None and not args.state_dir.is_dir()
    log.info("stopping", reason="state folder removed" if gone else "signal")
    controller.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
