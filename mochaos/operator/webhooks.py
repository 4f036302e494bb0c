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
build (xdist workers): a users file counts them; the last one out stops the host and
removes the configurations. A different build cannot share the port: while another
build's host has users, starting one is refused with one line.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock
from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos.cluster import attached
from mochaos.cluster.attached import Attached
from mochaos.errors import InfraError, UsageError
from mochaos.kube import api_client
from mochaos.procs import cmdline, stop_group
from mochaos.progress import announce
from mochaos.types import RUN_ID_LABEL, Cluster

PORT = 9443
"""The manager's webhook port (fixed in cmd/operator/main.go: ``Port: 9443``)."""
CONFIG_NAME = "mochaos-operator-webhooks"
READY_TIMEOUT = 60.0
WEBHOOK_NAMESPACE = "mochaos-webhooks"
"""The (empty) namespace the webhook host's own controllers watch."""


def check_port_free(port: int = PORT) -> None:
    """UsageError when something already listens on the webhook port (another cluster's
    host: the port is the machine's, so one real-operator build runs per machine at once)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError as err:
            raise UsageError(
                f"port {port} (the operator's webhook port) is in use on this machine, e.g. by "
                "the webhook host of another local cluster's real-operator run",
                hint="run one real-operator build per machine at a time; `ss -ltnp "
                f"'sport = :{port}'` shows the owner",
            ) from err


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
    return [f"--webhook-certificate-directory={certs}", "--ca-file=caBundle"]


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


def served(path: str, context: ssl.SSLContext) -> bool:
    """True when the webhook host handles ``path`` (an unknown path answers 404)."""
    req = urllib.request.Request(
        f"https://127.0.0.1:{PORT}{path}", data=b"{}", method="POST",
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=5, context=context):
            return True
    except urllib.error.HTTPError as err:
        return err.code != 404
    except (urllib.error.URLError, OSError):
        return False


def configurations(hooks: list[Hook], ca_bundle: bytes) -> tuple[dict[str, Any], ...]:
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
                "clientConfig": {"url": f"https://127.0.0.1:{PORT}{h.path}", "caBundle": ca},
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


class HostHandle(Protocol):
    """How the webhook host runs: a process of ours or a container (see :func:`host_handle`)."""

    def alive(self) -> bool:
        """True while the host runs."""
        ...

    def stop(self) -> None:
        """Stop the host (SIGTERM, then SIGKILL after a grace period)."""
        ...

    def record(self) -> dict[str, Any]:
        """What ``host.json`` keeps to find the host again (``kind`` and its identity)."""
        ...

    def attachment(self, name: str) -> Attached:
        """How ``cluster down`` stops the host, should it outlive its users (see
        :mod:`mochaos.cluster.attached`)."""
        ...


@dataclass(frozen=True)
class ProcessHost:
    """A webhook host run as a process, known by pid and command line."""

    pid: int
    argv: list[str]

    def alive(self) -> bool:
        """True while the pid still runs our command line."""
        return cmdline(self.pid) == self.argv

    def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL after 10 s (while the pid is still ours)."""
        stop_group(self.pid, self.argv, 10.0)

    def record(self) -> dict[str, Any]:
        """``kind: process``, pid and argv."""
        return {"kind": "process", "pid": self.pid, "argv": self.argv}

    def attachment(self, name: str) -> Attached:
        """Its process group, known by pid and command line."""
        return Attached(name, pid=self.pid, argv=self.argv)


HOST_NAME = "operator-webhook-host"
"""The webhook host's name among the things attached to its cluster."""


def host_handle(record: dict[str, Any]) -> HostHandle:
    """The handle ``host.json`` describes (a record without ``kind`` is a process)."""
    if record.get("kind") == "container":
        from mochaos.operator.container import ContainerHost

        return ContainerHost.from_record(record)
    return ProcessHost(int(record["pid"]), list(record["argv"]))


@dataclass
class WebhookHost:
    """The shared webhook-serving manager of one cluster (see the module docstring)."""

    state: Path
    """Folder of this cluster's host: lock, host.json, users/, certs/, log."""
    build: str
    """Identifies the operator build (binary digest, or image id)."""
    attach_to: Path | None = None
    """The cluster's folder: a started host is attached to it, so that ``cluster down``
    stops a host its users left running (killed midway)."""

    def _lock(self) -> FileLock:
        self.state.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.state / "lock"), timeout=600)

    def _host(self) -> tuple[dict[str, Any], HostHandle] | None:
        try:
            data = json.loads((self.state / "host.json").read_text())
            handle = host_handle(data)
        except (OSError, ValueError, KeyError):
            return None
        return (data, handle) if handle.alive() else None

    def _users(self) -> list[int]:
        users = self.state / "users"
        users.mkdir(parents=True, exist_ok=True)
        alive = []
        for f in users.iterdir():
            pid = int(f.name)
            if Path(f"/proc/{pid}").exists():
                alive.append(pid)
            else:
                f.unlink(missing_ok=True)
        return alive

    def acquire(self, start: Callable[[], HostHandle]) -> dict[str, Any]:
        """Join the running host of this build, or start one with ``start()``."""
        with self._lock():
            found = self._host()
            others = [p for p in self._users() if p != os.getpid()]
            if found is not None and found[0]["build"] != self.build:
                if others:
                    raise UsageError(
                        f"operator build {found[0]['build'][:12]} serves the webhooks of this "
                        f"cluster for pytest processes {others}",
                        hint="run one operator build per cluster at a time (or another "
                        "cluster: MOCHAOS_CLUSTER_NAME)",
                    )
                found[1].stop()
                found = None
            if found is None:
                host = {**start().record(), "build": self.build}
                (self.state / "host.json").write_text(json.dumps(host))
                if self.attach_to is not None:
                    attached.attach(self.attach_to, host_handle(host).attachment(HOST_NAME))
            else:
                host = found[0]
            (self.state / "users" / str(os.getpid())).touch()
            return host

    def release(self, cleanup: Callable[[], None]) -> None:
        """Leave; the last user stops the host and runs ``cleanup()``."""
        with self._lock():
            (self.state / "users" / str(os.getpid())).unlink(missing_ok=True)
            if self._users():
                return
            found = self._host()
            if found is not None:
                found[1].stop()
            (self.state / "host.json").unlink(missing_ok=True)
            if self.attach_to is not None:
                attached.detach(self.attach_to, HOST_NAME)
            cleanup()


def wait_serving(context: ssl.SSLContext, log: Path, proc_alive: Callable[[], bool]) -> None:
    """Wait until the host completes a TLS handshake on its port; InfraError otherwise."""
    import socket

    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if not proc_alive():
            raise InfraError("the operator's webhook host exited", hint=f"see {log}")
        try:
            with (
                socket.create_connection(("127.0.0.1", PORT), timeout=1) as sock,
                context.wrap_socket(sock, server_hostname="127.0.0.1"),
            ):
                return
        except OSError:
            time.sleep(0.2)
    raise InfraError(f"webhook host not serving on :{PORT} after {READY_TIMEOUT:.0f}s",
                     hint=f"see {log}")  # fmt: skip


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


def unregister(cluster: Cluster) -> None:
    """Remove the two webhook configurations (absent is fine)."""
    with api_client(cluster.kubeconfig, user_agent="mochaos/install",
                    context=cluster.context) as api:  # fmt: skip
        adm = client.AdmissionregistrationV1Api(api)
        for delete in (adm.delete_mutating_webhook_configuration,
                       adm.delete_validating_webhook_configuration):  # fmt: skip
            try:
                delete(CONFIG_NAME)
            except ApiException as err:
                if err.status != 404:
                    raise


def tls_context(ca_file: Path) -> ssl.SSLContext:
    """A client TLS context trusting only our webhook CA."""
    return ssl.create_default_context(cafile=str(ca_file))


def announce_hooks(hooks: list[Hook]) -> None:
    """Say which webhooks the build serves."""
    kinds = sorted({h.plural for h in hooks})
    announce(f"operator webhooks served for {', '.join(kinds) or 'nothing'} (127.0.0.1:{PORT})")
