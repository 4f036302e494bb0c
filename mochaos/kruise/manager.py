"""kruise-manager run as a process of the local cluster, supervised like its components.

:func:`spec` is its :class:`~mochaos.doubles.DoubleSpec` (the local cluster runs every
process beside the control plane through one host, :mod:`mochaos.cluster.local.doubles_host`;
this one is the real OpenKruise, not a double). ``prepare`` builds the manager
(:func:`mochaos.kruise.kruise_build.kruise_manager`), picks this cluster's two ports once
(kept in the state folder, so a restart serves the same address), installs all of kruise's
CRDs under mo-chaos's ownership rules (:mod:`mochaos.crds`, owner ``kruise``) and
creates its two webhook configurations from the module (kruise-manager finds them by name,
fills in its CA and rewrites every hook to ``https://127.0.0.1:<port>/path``). The manager
writes its own certificate into the state folder (WEBHOOK_HOST/WEBHOOK_PORT/
WEBHOOK_CERT_DIR), runs without leader election, metrics or pprof, with kruise-daemon's
gate off, and is healthy when its ``/readyz`` (which includes its webhook server) answers
200.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from mochaos import crds
from mochaos.doubles import DoubleContext, DoubleSpec
from mochaos.errors import InfraError
from mochaos.kruise import kruise_build as build
from mochaos.kruise import module
from mochaos.kube import Cluster, api_client

NAME = "kruise"
NAMESPACE = "kruise-system"
"""POD_NAMESPACE: the namespace kruise would run in (its webhook controller watches its
certificate Secret there; with WEBHOOK_HOST the certificate is written to files instead)."""
FEATURE_GATES = (
    "StatefulSetAutoDeletePVC=true,PodUnavailableBudgetDeleteGate=true,"
    "PodUnavailableBudgetUpdateGate=true,KruiseDaemon=false"
)
"""kruise's feature gates wherever mo-chaos runs it (the local cluster here, the kind path's
chart): the operator chart's (its values.yaml at 2301e3b) plus ``KruiseDaemon=false``. No
kruise-daemon runs on kwok nodes (nor on kind, where 1.4.0's daemon crash-loops on
containerd 2.x): with its gate on, an in-place update of an annotation the CN container reads
as an environment variable waits for container metadata only the daemon writes (kruise
pkg/util/inplaceupdate: UpdateEnvFromMetadata), and the chart renders the daemon's
DaemonSet. ``StatefulSetAutoDeletePVC`` makes the LogSet's and DNSet's volumes follow the
operator's ``persistentVolumeClaimRetentionPolicy``."""
PORTS_FILE = "ports.json"
CERTS = "certs"
VERSION_ANNOTATION = "mochaos.io/kruise-version"
"""On the webhook configurations mo-chaos created: the kruise version they came from."""
HEALTH_TIMEOUT = 2.0


def spec(version: str) -> DoubleSpec:
    """How the local cluster runs kruise-manager of OpenKruise ``version``."""
    return DoubleSpec(
        name=NAME,
        description=f"OpenKruise kruise-manager {version}",
        command=lambda ctx: command(ctx, version),
        health=health,
        prepare=lambda ctx: prepare(ctx, version),
        env=environment,
        kind="component",
    )


def _binary(version: str) -> Path:
    return build.component(version).path(module.BINARY)


def ports(ctx: DoubleContext) -> dict[str, int]:
    """This cluster's ``webhook`` and ``health`` ports, chosen once by :func:`prepare`."""
    try:
        data = json.loads((ctx.state_dir / PORTS_FILE).read_text())
        return {"webhook": int(data["webhook"]), "health": int(data["health"])}
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InfraError(
            f"kruise-manager has no ports in {ctx.state_dir / PORTS_FILE}",
            hint="start it through the local cluster (its prepare step picks them)",
        ) from err


def command(ctx: DoubleContext, version: str) -> list[str]:
    """The manager's argv on this cluster."""
    return [
        str(_binary(version)),
        f"--kubeconfig={ctx.kubeconfig}",
        "--enable-leader-election=false",
        "--metrics-addr=0",
        f"--health-probe-addr=127.0.0.1:{ports(ctx)['health']}",
        "--enable-pprof=false",
        f"--feature-gates={FEATURE_GATES}",
    ]


def environment(ctx: DoubleContext) -> dict[str, str]:
    """Where its webhook server listens and keeps the certificate it makes for itself."""
    return {
        "WEBHOOK_HOST": "127.0.0.1",
        "WEBHOOK_PORT": str(ports(ctx)["webhook"]),
        "WEBHOOK_CERT_DIR": str(ctx.state_dir / CERTS),
        "POD_NAMESPACE": NAMESPACE,
    }


def health(ctx: DoubleContext) -> str | None:
    """None when ``/readyz`` answers 200 (its webhook server serves), else why not."""
    url = f"http://127.0.0.1:{ports(ctx)['health']}/readyz"
    try:
        with urllib.request.urlopen(url, timeout=HEALTH_TIMEOUT) as resp:
            return None if resp.status == 200 else f"{url}: HTTP {resp.status}"
    except urllib.error.HTTPError as err:
        return f"{url}: HTTP {err.code}"
    except (OSError, urllib.error.URLError) as err:
        reason = getattr(err, "reason", err)
        return f"{url}: {reason}"


def prepare(ctx: DoubleContext, version: str) -> None:
    """Build the manager, pick the ports, install the CRDs and webhook configurations."""
    build.kruise_manager(version)
    (ctx.state_dir / CERTS).mkdir(parents=True, exist_ok=True)
    if not (ctx.state_dir / PORTS_FILE).is_file():
        (ctx.state_dir / PORTS_FILE).write_text(
            json.dumps({"webhook": _free_port(), "health": _free_port()})
        )
    folder = build.component(version).directory
    install_crds(ctx, version, module.read_manifests(folder / module.CRDS_FILE))
    ensure_webhook_configurations(
        ctx, version, module.read_manifests(folder / module.WEBHOOKS_FILE)
    )


def _free_port() -> int:
    """A port free on every interface (kruise's webhook server binds 0.0.0.0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("0.0.0.0", 0))
        return int(s.getsockname()[1])


def install_crds(ctx: DoubleContext, version: str, docs: list[dict[str, Any]]) -> None:
    """kruise's CRDs, owned ``kruise`` (replacing any other set of ours of the same names:
    the operator chart's copies or an older mo-chaos's minimal ones)."""
    crds.install(_cluster(ctx), crd_set(version, docs))


def crd_set(version: str, docs: list[dict[str, Any]]) -> crds.CrdSet:
    """kruise's CRDs as a :class:`mochaos.crds.CrdSet` (owner ``kruise``)."""
    return crds.CrdSet(
        crds.KRUISE_OWNER, f"{module.MODULE}@{version} config/crd/bases", tuple(docs)
    )


def ensure_webhook_configurations(
    ctx: DoubleContext, version: str, configs: list[dict[str, Any]]
) -> None:
    """Create kruise's webhook configurations where missing; replace ones of another
    version. An existing one of this version is left as kruise-manager rewrote it."""
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    with api_client(ctx.kubeconfig, user_agent="mochaos/kruise") as api:
        adm = client.AdmissionregistrationV1Api(api)
        for config in configs:
            mutating = config["kind"] == "MutatingWebhookConfiguration"
            read = (adm.read_mutating_webhook_configuration if mutating
                    else adm.read_validating_webhook_configuration)  # fmt: skip
            create = (adm.create_mutating_webhook_configuration if mutating
                      else adm.create_validating_webhook_configuration)  # fmt: skip
            delete = (adm.delete_mutating_webhook_configuration if mutating
                      else adm.delete_validating_webhook_configuration)  # fmt: skip
            name = config["metadata"]["name"]
            try:
                current = read(name, _request_timeout=10)
            except ApiException as err:
                if err.status != 404:
                    raise
                current = None
            if current is not None:
                have = (current.metadata.annotations or {}).get(VERSION_ANNOTATION)
                if have == version:
                    continue
                delete(name, _request_timeout=10)
            meta = {**config["metadata"], "annotations": {VERSION_ANNOTATION: version}}
            body = {**config, "metadata": meta}
            create(body, _request_timeout=10)


def _cluster(ctx: DoubleContext) -> Any:
    return Cluster(
        name=ctx.cluster_name, provider="local", kubeconfig=ctx.kubeconfig, version="",
        state_dir=ctx.kubeconfig.parent,
    )  # fmt: skip
