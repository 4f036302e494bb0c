"""One pytest process's use of the webhook host, run as a child process by the tests of
:mod:`mochaos.operator.webhooks.host` (as xdist workers are separate processes).

``python host_worker.py <config.json>``: waits for the config's ``start_at`` instant (so
that N workers arrive together), finds the manager (given, or built from a checkout by
the product's build), acquires the host with the product's start path (spawn, wait until
serving), checks that the host serves right after it joined, holds it ``hold`` seconds
(and until the file ``hold_until`` exists, when given), releases it, and writes what it
saw to ``out`` after each step.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path
from typing import Any

from mochaos import progress
from mochaos.errors import MochaosError
from mochaos.kube import Cluster
from mochaos.operator.provenance.checkout import Checkout
from mochaos.operator.provenance.manager_build import build_manager
from mochaos.operator.targets.local_manager import ManagerTarget
from mochaos.operator.webhooks import admission as webhooks
from mochaos.operator.webhooks.host import WebhookHost


def serving(port: int, ca: Path) -> bool:
    """True when the host completes a TLS handshake with our CA on ``port`` now."""
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=2) as sock,
            webhooks.tls_context(ca).wrap_socket(sock, server_hostname="127.0.0.1"),
        ):
            return True
    except OSError:
        return False


def main(config_path: str) -> int:
    progress.install(progress.Sink(sys.stderr, verbose=True, clock=False))
    config = json.loads(Path(config_path).read_text())
    out = Path(config["out"])
    seen: dict[str, Any] = {}

    def note(**items: Any) -> None:
        seen.update(items)
        out.write_text(json.dumps(seen))

    state, port = Path(config["state"]), int(config["port"])
    checkout = config.get("checkout")
    target = ManagerTarget(
        spec="binary:standin", version="standin", crd_root=state, crd_source="standin",
        binary=Path(config["manager"]) if config.get("manager") else None,
        build=(lambda: build_manager(Checkout(Path(checkout), "f" * 40, ""))) if checkout else None,
    )  # fmt: skip
    target.webhook_port = port
    cluster = Cluster("standin", "local", Path(config["kubeconfig"]), "v1", state_dir=state)
    time.sleep(max(0.0, float(config.get("start_at", 0)) - time.time()))
    try:
        host = WebhookHost(state, build=target._identity(), attach_to=Path(config["cluster_dir"]),
                           port=port)  # fmt: skip
        record = host.acquire(lambda: target._serve_webhooks(cluster, state))
    except MochaosError as err:
        note(error=f"{type(err).__name__}: {err}")
        return 1
    note(record=record, serving=serving(port, state / "certs" / "caBundle"))
    time.sleep(float(config.get("hold", 0)))
    if config.get("hold_until"):  # a file the test creates when the worker may leave
        deadline = time.monotonic() + 600
        while not Path(config["hold_until"]).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    try:
        host.release(lambda: None)
    except MochaosError as err:
        note(release_error=f"{type(err).__name__}: {err}")
        return 1
    note(released=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
