"""The operator's admission webhooks, served for real on the local cluster.

The operator's webhooks default and validate LogSets, DNSets, CNSets (also those its
own pool creates), proxies and clusters; without them its controllers see objects no
real cluster would hold. The manager serves them on 0.0.0.0:9443 — a port its code
fixes — so one manager per cluster, the *webhook host*, serves them for every test
namespace (the handlers are stateless), while the per-namespace managers run with
webhooks off. mo-chaos gives the host a self-signed certificate for 127.0.0.1 and
registers URL-based webhook configurations pointing at it, limited to namespaces
carrying mo-chaos's run-id label. Which webhooks the build serves is found by asking
it: every kind of the operator's CRDs is tried at the paths its framework uses
(``/mutate-<group>-<version>-<kind>``), and the paths that answer are registered.

The host is shared by every pytest process using the same cluster and operator
build (xdist workers); its life — joined, started, replaced, stopped — is
:mod:`mochaos.operator.webhooks.host`'s.
"""

from __future__ import annotations

import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.errors import InfraError
from mochaos.kube import Cluster, api_client
from mochaos.progress import announce
from mochaos.tooling.waiting import wait_for

PORT = 9443
"""The manager's webhook port (fixed in cmd/operator/main.go: ``Port: 9443``)."""
CONFIG_NAME = "mochaos-operator-webhooks"
READY_TIMEOUT = 60.0
CERT_FLAG = "--webhook-certificate-directory"
"""The manager's flag naming its serving certificate's folder (ours: in the cluster's)."""
WEBHOOK_NAMESPACE = "mochaos-webhooks"
"""The (empty) namespace the webhook host's own controllers watch."""


def make_certificates(directory: Path) -> Path:
    """A CA and a serving certificate for 127.0.0.1 (openssl), as the manager expects them:
    ``tls.crt``, ``tls.key`` and the CA bundle in ``caBundle``."""
    directory.mkdir(parents=True, exist_ok=True)
    if (directory / "caBundle").is_file() and (directory / "tls.crt").is_file():
        return directory

    def openssl(*args: str) -> None:
        proc = subprocess.run(["openssl", *args], cwd=directory, capture_output=True, text=True)
        if proc.returncode != 0:
            raise InfraError(f"openssl {args[0]} failed: {proc.stderr.strip()[:200]}",
                             hint="install openssl")  # fmt: skip

    days = "3650"
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
            "ca.crt", "-days", days, "-subj", "/CN=mochaos-webhook-ca")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr",
            "-subj", "/CN=127.0.0.1")  # fmt: skip
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "tls.crt", "-days", days, "-extfile", "san.ext")  # fmt: skip
    (directory / "caBundle").write_bytes((directory / "ca.crt").read_bytes())
    return directory


def host_args(certs: Path) -> list[str]:
    """The webhook host's own flags: our certificate folder and the CA bundle's file name."""
    return [f"{CERT_FLAG}={certs}", "--ca-file=caBundle"]


@dataclass(frozen=True)
class Hook:
    """One candidate webhook: the path the framework serves it at and what it admits."""

    path: str
    group: str
    version: str
    plural: str
    mutating: bool


def candidates(crd_docs: tuple[dict[str, Any], ...]) -> list[Hook]:
    """Every candidate webhook of the operator's CRDs (of its own API group)."""
    out = []
    for doc in crd_docs:
        spec = doc["spec"]
        group = spec["group"]
        if not group.endswith("matrixorigin.io"):
            continue
        for v in spec.get("versions") or []:
            if not v.get("served", True):
                continue
            slug = f"{group.replace('.', '-')}-{v['name']}-{spec['names']['kind'].lower()}"
            for mutating in (True, False):
                kind = "mutate" if mutating else "validate"
                out.append(Hook(f"/{kind}-{slug}", group, v["name"], spec["names"]["plural"],
                                mutating))  # fmt: skip
    return out


def served(path: str, context: ssl.SSLContext, port: int = PORT) -> bool:
    """True when the webhook host handles ``path`` (an unknown path answers 404)."""
    req = urllib.request.Request(
        f"https://127.0.0.1:{port}{path}", data=b"{}", method="POST",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=5, context=context):
            return True
    except urllib.error.HTTPError as err:
        return err.code != 404
    except (urllib.error.URLError, OSError):
        return False


def configurations(
    hooks: list[Hook], ca_bundle: bytes, port: int = PORT
) -> tuple[dict[str, Any], ...]:
    """The mutating and validating configurations for the served hooks."""
    import base64

    ca = base64.b64encode(ca_bundle).decode()
    meta = {"name": CONFIG_NAME, "labels": {"app.kubernetes.io/managed-by": "mochaos"}}
    docs = []
    for mutating, kind in ((True, "MutatingWebhookConfiguration"),
                           (False, "ValidatingWebhookConfiguration")):  # fmt: skip
        webhooks = [
            {
                "name": f"{'m' if h.mutating else 'v'}{h.plural}.mochaos.io",
                "clientConfig": {"url": f"https://127.0.0.1:{port}{h.path}", "caBundle": ca},
                "rules": [{"apiGroups": [h.group], "apiVersions": [h.version],
                           "resources": [h.plural], "operations": ["CREATE", "UPDATE"]}],
                "namespaceSelector": {
                    "matchExpressions": [{"key": RUN_ID_LABEL, "operator": "Exists"}]},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1", "v1beta1"],
                "failurePolicy": "Fail",
                "timeoutSeconds": 10,
            }
            for h in hooks if h.mutating == mutating
        ]  # fmt: skip
        docs.append({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                     "metadata": dict(meta), "webhooks": webhooks})  # fmt: skip
    return tuple(docs)


def wait_serving(
    context: ssl.SSLContext, log: Path, proc_alive: Callable[[], bool], port: int = PORT
) -> None:
    """Wait until the host completes a TLS handshake on ``port``; InfraError otherwise."""
    import socket

    def handshake() -> tuple[bool, str]:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=1) as sock,
            context.wrap_socket(sock, server_hostname="127.0.0.1"),
        ):
            return True, "serving"

    wait_for(
        handshake, what=f"webhook host on :{port}", timeout=READY_TIMEOUT, interval=0.2,
        hint=f"see {log}",
        stop_if=lambda: None if proc_alive() else "the operator's webhook host exited",
    )  # fmt: skip


def register(cluster: Cluster, docs: tuple[dict[str, Any], ...]) -> None:
    """Create or replace the two webhook configurations."""
    with api_client(cluster.kubeconfig, user_agent="mochaos/install",
                    context=cluster.context) as api:  # fmt: skip
        adm = client.AdmissionregistrationV1Api(api)
        for doc, create, replace in (
            (docs[0], adm.create_mutating_webhook_configuration,
             adm.replace_mutating_webhook_configuration),
            (docs[1], adm.create_validating_webhook_configuration,
             adm.replace_validating_webhook_configuration),
        ):  # fmt: skip
            try:
                create(doc)
            except ApiException as err:
                if err.status != 409:
                    raise
                read = (adm.read_mutating_webhook_configuration if doc["kind"].startswith("Mut")
                        else adm.read_validating_webhook_configuration)  # fmt: skip
                doc["metadata"]["resourceVersion"] = read(CONFIG_NAME).metadata.resource_version
                replace(CONFIG_NAME, doc)


def unregister(cluster: Cluster) -> list[str]:
    """Remove the two webhook configurations (absent is fine); the kinds that were there."""
    removed = []
    with api_client(cluster.kubeconfig, user_agent="mochaos/install",
                    context=cluster.context) as api:  # fmt: skip
        adm = client.AdmissionregistrationV1Api(api)
        for kind, delete in (
            ("MutatingWebhookConfiguration", adm.delete_mutating_webhook_configuration),
            ("ValidatingWebhookConfiguration", adm.delete_validating_webhook_configuration),
        ):  # fmt: skip
            try:
                delete(CONFIG_NAME)
            except ApiException as err:
                if err.status != 404:
                    raise
            else:
                removed.append(kind)
    return removed


def tls_context(ca_file: Path) -> ssl.SSLContext:
    """A client TLS context trusting only our webhook CA."""
    return ssl.create_default_context(cafile=str(ca_file))


def announce_hooks(hooks: list[Hook], port: int = PORT) -> None:
    """Say which webhooks the build serves."""
    kinds = sorted({h.plural for h in hooks})
    announce(f"operator webhooks served for {', '.join(kinds) or 'nothing'} (127.0.0.1:{port})")
