"""What an operator target left on the local cluster once its runs ended, found and removed.

``qualify`` runs its targets one after another on one cluster; a sweep runs before the
first and after each, while no other process uses the cluster
(:mod:`mochaos.cluster.local.in_use`). By then every pytest process of the target has ended, so
anything of it still there is a *leftover*, a fault of the framework: a dead run's recorded
processes, containers and namespaces (reaped as the next run would), a webhook host still
running, the webhook configurations, a namespace carrying the
run-id label, a namespace the MatrixOne double still serves. Each is removed and named in
one line; a qualification with leftovers is not trusted blindly. A port 9443 held by
another cluster's host is noted, not touched. The CRDs mo-chaos
installed for a target are removed as a matter of course (OpenKruise's, served by the
cluster's kruise-manager, stay; the doubles' own are put back), and
the webhook host's empty namespace, so that the next target installs its own.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos import namespaces, runstate
from mochaos.cluster.local import doubles_host, in_use
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.crds import KRUISE_OWNER, OWNER_LABEL, SOURCE_ANNOTATION
from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.doubles import DoubleSpec, matrixone
from mochaos.doubles.matrixone.client import ControlClient
from mochaos.errors import InfraError, MochaosError
from mochaos.kube import Cluster, api_client
from mochaos.operator.webhooks import admission as webhooks
from mochaos.operator.webhooks.host import WebhookHost, port_free
from mochaos.procs import cmdline, listeners
from mochaos.report.testreport import write_killed

GONE_TIMEOUT = 60.0
"""Seconds for a namespace or a CRD to disappear once deleted."""


@dataclass
class Sweep:
    """One sweep of the cluster: leftovers found (and removed), routine removals, or why the
    cluster could not be swept."""

    when: str
    """``before <target>`` or ``after <target>``."""
    left: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What is in the way but not this cluster's (another cluster's host on the port)."""
    unchecked: str = ""

    @property
    def clean(self) -> bool:
        """True when the sweep ran and found no leftover."""
        return not self.left and not self.unchecked

    def line(self) -> str:
        """One line for the qualify output and reports."""
        if self.unchecked:
            return f"{self.when}: not checked ({self.unchecked})"
        routine = f"; removed {', '.join(self.removed)}" if self.removed else ""
        notes = "".join(f"; note: {n}" for n in self.notes)
        if not self.left:
            return (f"{self.when}: nothing left (processes, webhook host, webhook "
                    f"configurations, namespaces){routine}{notes}")  # fmt: skip
        return f"{self.when}: LEFT {'; '.join(self.left)} (all removed){routine}{notes}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, with :meth:`line` and :attr:`clean`."""
        return {**asdict(self), "clean": self.clean, "line": self.line()}


def sweep(when: str, *, provider: str) -> Sweep:
    """Sweep the local cluster (see the module docstring) while nobody else uses it; other
    providers, a cluster not running and a cluster in use are not swept (said why)."""
    out = Sweep(when)
    if provider != "local":
        out.unchecked = f"only the local cluster is swept, not {provider}"
        return out

    local = LocalProvider()
    cluster = local.current()
    if cluster is None:
        out.unchecked = f"local cluster {local.cluster_name} is not running"
        return out
    contexts = [
        (d, doubles_host.context(d, cluster_name=local.cluster_name, cluster_dir=local.cluster_dir))
        for d in local.doubles
    ]
    # A cluster started for the model runs no MatrixOne double: nothing it serves to check.
    double = next((ctx.state_dir for d, ctx in contexts if d.name == matrixone.NAME), None)
    with in_use.exclusive(local.cluster_dir) as users:
        if users is not None:
            out.unchecked = f"other processes use cluster {local.cluster_name} (pids {users})"
            return out
        try:
            _sweep(out, cluster, double, contexts)
        except MochaosError as err:
            out.unchecked = f"the sweep failed: {err}"
        except ApiException as err:
            out.unchecked = f"the sweep failed: the apiserver answered {err.status} {err.reason}"
    return out


def _sweep(
    out: Sweep, cluster: Cluster, double_state: Path | None, doubles: list[tuple[DoubleSpec, Any]]
) -> None:
    assert cluster.state_dir is not None
    reaped = runstate.reap(namespaces.reap, write_killed)
    out.left += [f"a dead run's record: {line}" for line in reaped if not line.startswith("  ")]
    out.left += WebhookHost(cluster.state_dir / "operator-webhooks", build="").reclaim()
    if not port_free(webhooks.PORT):
        owners = [f"{pid} ({' '.join(cmdline(pid)[:2])[:80]})" for pid in listeners(webhooks.PORT)]
        out.notes.append(f"port {webhooks.PORT} is held by {owners or '?'}, not this cluster's")
    out.left += [f"{kind} {webhooks.CONFIG_NAME}" for kind in webhooks.unregister(cluster)]
    with api_client(cluster.kubeconfig, user_agent="mochaos/sweep", context=cluster.context) as api:
        core = client.CoreV1Api(api)
        for ns in core.list_namespace(label_selector=RUN_ID_LABEL, _request_timeout=10).items:
            namespaces.delete(api, ns.metadata.name, grace=namespaces.TEARDOWN_GRACE)
            out.left.append(f"namespace {ns.metadata.name}")
        if double_state is not None:
            out.left += [f"the MatrixOne double still serving namespace {ns}"
                         for ns in _double_namespaces(double_state)]  # fmt: skip
        out.removed += _remove_crds(api)
        for double, ctx in doubles:
            double.prepare(ctx)
        if _delete(
            lambda: core.delete_namespace(webhooks.WEBHOOK_NAMESPACE, _request_timeout=10),
            lambda: core.read_namespace(webhooks.WEBHOOK_NAMESPACE, _request_timeout=10),
        ):
            out.removed.append(f"namespace {webhooks.WEBHOOK_NAMESPACE}")  # fmt: skip


def _double_namespaces(state: Path) -> list[str]:
    """The namespaces the MatrixOne double (its state folder ``state``) still runs a
    MatrixOne for (none once their LogSets are gone: it stops them within a second or
    two)."""
    deadline = time.monotonic() + GONE_TIMEOUT
    while True:
        try:
            served = sorted(ControlClient.from_state_dir(state).clusters())
        except InfraError:
            return []
        if not served or time.monotonic() >= deadline:
            return served
        time.sleep(0.5)


def _remove_crds(api: client.ApiClient) -> list[str]:
    """Delete every CRD a target installed (labelled with its set and source); one line per
    source. OpenKruise's, installed with the cluster's kruise-manager (which serves them
    to every target), stay; any a target had replaced are put back by the doubles'
    ``prepare``."""
    ext = client.ApiextensionsV1Api(api)
    by_source: dict[str, int] = {}
    listed = ext.list_custom_resource_definition(label_selector=OWNER_LABEL, _request_timeout=10)
    for crd in listed.items:
        name, source = crd.metadata.name, (crd.metadata.annotations or {}).get(SOURCE_ANNOTATION)
        if source is None or crd.metadata.labels.get(OWNER_LABEL) == KRUISE_OWNER:
            continue
        if _delete(
            lambda n=name: ext.delete_custom_resource_definition(n, _request_timeout=10),
            lambda n=name: ext.read_custom_resource_definition(n, _request_timeout=10),
        ):
            by_source[source] = by_source.get(source, 0) + 1
    return [f"{n} CRDs ({source})" for source, n in sorted(by_source.items())]


def _delete(delete: Any, read: Any) -> bool:
    """Delete one object and wait until it is gone; False when it was not there."""
    try:
        delete()
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    deadline = time.monotonic() + GONE_TIMEOUT
    while time.monotonic() < deadline:
        try:
            read()
        except ApiException as err:
            if err.status == 404:
                return True
            raise
        time.sleep(0.2)
    return True
