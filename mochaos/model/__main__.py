"""``python -m mochaos.model``: run the reference operator model against one namespace.

Exit status: 0 after SIGTERM/SIGINT, 2 for bad arguments (unknown profile, missing
kubeconfig), 3 when the apiserver cannot be reached or the caches never sync.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from mochaos.ctrl.finalizers import STORE_DRAIN_TIMEOUT
from mochaos.ctrl.rest import Kube
from mochaos.model.app import Model
from mochaos.model.logs import Logger, LogSink
from mochaos.model.profiles import get_profile, valid_names
from mochaos.model.timing import Timing

EXIT_USAGE = 2
EXIT_INFRA = 3


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m mochaos.model",
        description="matrixone-operator's claim protocol, run against a real apiserver.",
    )
    p.add_argument("--profile", required=True, help=f"operator version: {valid_names()}")
    p.add_argument("--kubeconfig", required=True, help="kubeconfig of the cluster")
    p.add_argument("--context", help="kubeconfig context (default: the file's current context)")
    p.add_argument("--namespace", required=True, help="the only namespace watched and acted in")
    p.add_argument("--log-file", help="JSON log lines go here (default: stderr)")
    p.add_argument("--ready-file", help="written with the pid once caches synced and workers run")
    p.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        help="multiplies every operator interval (default 1)",
    )
    p.add_argument("--max-idle", type=int, help="overrides the CNPool's scaleStrategy.maxIdle")
    p.add_argument(
        "--min-delay", type=float, default=15.0, help="CN drain minimum delay, operator seconds"
    )
    p.add_argument(
        "--drain-timeout",
        type=float,
        default=STORE_DRAIN_TIMEOUT,
        help="CN drain timeout, operator seconds",
    )
    p.add_argument(
        "--user-agent", help="API user agent (default matrixone-operator-model/<profile>)"
    )
    p.add_argument(
        "--matrixone-faults",
        type=Path,
        help="JSON file of the model's MatrixOne components a scenario took down (read before "
        "each call to MatrixOne; default: never down)",
    )
    p.add_argument(
        "--pod-image",
        help="run the pool's pods on the cluster's real nodes with this image, one the nodes "
        "already have (never pulled; e.g. their pause image); default: on kwok's fake nodes",
    )
    return p


def _usage(message: str) -> int:
    print(f"mochaos.model: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the model until a termination signal; return the exit status."""
    args = _parser().parse_args(argv)
    # The log file holds our JSON lines only: keep library loggers (urllib3 retries) out of it.
    logging.getLogger().addHandler(logging.NullHandler())
    try:
        profile = get_profile(args.profile)
    except KeyError as err:
        return _usage(err.args[0])
    if not Path(args.kubeconfig).is_file():
        return _usage(f"kubeconfig {args.kubeconfig} does not exist: pass an existing file")
    if args.time_scale <= 0:
        return _usage(f"--time-scale must be positive, got {args.time_scale}")
    timing = Timing(
        scale=args.time_scale, min_delay=args.min_delay, drain_timeout=args.drain_timeout
    )
    stream = open(args.log_file, "a", encoding="utf-8") if args.log_file else sys.stderr  # noqa: SIM115
    sink = LogSink(stream)
    log = Logger(sink)
    user_agent = args.user_agent or f"matrixone-operator-model/{profile.name}"
    try:
        kube = Kube.from_kubeconfig(args.kubeconfig, user_agent=user_agent, context=args.context)
    except Exception as err:  # any unreadable kubeconfig is a usage error
        return _usage(f"cannot load kubeconfig {args.kubeconfig}: {err}")
    model = Model(
        kube=kube,
        namespace=args.namespace,
        profile=profile,
        timing=timing,
        log=log,
        max_idle=args.max_idle,
        matrixone_faults=args.matrixone_faults,
        pod_image=args.pod_image,
    )
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if not model.start(abort=stop):
        sink.close()
        if stop.is_set():
            os._exit(0)
        print(
            f"mochaos.model: no answer from the apiserver of {args.kubeconfig} within "
            "30 s: check that the cluster runs",
            file=sys.stderr,
        )
        os._exit(EXIT_INFRA)
    log.info(
        "mochaos model ready",
        caller="mochaos/model",
        profile=profile.name,
        namespace=args.namespace,
    )
    if args.ready_file:
        tmp = Path(f"{args.ready_file}.tmp")
        tmp.write_text(str(os.getpid()))
        tmp.replace(args.ready_file)
    while not stop.wait(0.2):
        pass
    model.stop()
    sink.close()
    # Watches and in-flight requests run in daemon threads; leave without waiting for them.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
