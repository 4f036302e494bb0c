"""kwokctl, as the local provider drives it: a new cluster's configuration and each command.

The configuration names our cached binaries (kwokctl only downloads ``http(s)://``
sources), binds every component to 127.0.0.1, gives each the port
:mod:`mochaos.cluster.local.ports` chose machine-wide, turns the apiserver's audit log on
and lists kwok's default Stages followed by the kubelet stand-ins of
:mod:`mochaos.cluster.local.stages`. Every command runs with our kubectl first on PATH and
is logged with what it printed and how it ended; one that fails or hangs says its last line
and each component's.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from mochaos.binaries import control_plane
from mochaos.binaries.kwok_stages import DEFAULTS_FILE
from mochaos.cluster.local import ports
from mochaos.cluster.local import stages as kwok_stages
from mochaos.cluster.local.cluster_dir import COMPONENTS, LocalClusterBase
from mochaos.cluster.local.processes import last_line
from mochaos.errors import InfraError

_AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        # Heartbeats of kwok's fake nodes and leader leases would drown the log.
        {"level": "None", "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}]},
        {"level": "None", "resources": [{"group": "", "resources": ["nodes", "nodes/status"]}]},
        {"level": "None", "nonResourceURLs": ["/healthz*", "/readyz*", "/livez*", "/version"]},
        {"level": "Metadata"},
    ],
}


class Kwokctl(LocalClusterBase):
    """The kwokctl commands and configuration of one local cluster."""

    def _env(self) -> dict[str, str]:
        paths = control_plane.binary_paths()
        bin_dirs = [str(paths["kubectl"].parent), str(paths["kwokctl"].parent)]
        env = dict(os.environ)
        env["PATH"] = os.pathsep.join([*bin_dirs, env.get("PATH", "")])
        env["KWOK_WORKDIR"] = str(self.workdir)
        env.pop("KUBECONFIG", None)
        return env

    def _config_file(self) -> Path:
        """The kwokctl configuration of a new cluster (written under the creation lock)."""
        paths = control_plane.binary_paths()
        options: dict[str, Any] = {
            "runtime": "binary",
            "bindAddress": "127.0.0.1",
            "kubeVersion": control_plane.KUBERNETES_VERSION,
            "etcdBinary": str(paths["etcd"]),
            "kubeApiserverBinary": str(paths["kube-apiserver"]),
            "kubeControllerManagerBinary": str(paths["kube-controller-manager"]),
            "kubeSchedulerBinary": str(paths["kube-scheduler"]),
            "kwokControllerBinary": str(paths["kwok"]),
            "kubectlBinary": str(paths["kubectl"]),
            "kubeAuditPolicy": str(self._audit_policy_file()),
        }
        if self.apiserver_port is not None:
            options["kubeApiserverPort"] = self.apiserver_port
        # Under the creation lock: no port another state folder's cluster records.
        options.update(ports.for_new_cluster(self.workdir, options))
        doc = {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokctlConfiguration",
            "options": options,
        }
        # A Stage list replaces kwok's defaults: the defaults come first, then ours.
        docs = [doc, *kwok_stages.documents(default_stages())]
        path = self.workdir / f"{self.cluster_name}.kwokctl.yaml"
        path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
        return path

    def _audit_policy_file(self) -> Path:
        path = self.workdir / "audit-policy.yaml"
        path.write_text(yaml.safe_dump(_AUDIT_POLICY, sort_keys=False))
        return path

    def _kwokctl(self, *args: str, timeout: float, config: Path | None = None) -> str:
        kwokctl = str(control_plane.binary_paths()["kwokctl"])
        cmd = [kwokctl, *(["-c", str(config)] if config else []), *args]
        log = self.workdir / f"{self.cluster_name}.kwokctl.log"
        try:
            proc = subprocess.run(
                cmd, env=self._env(), capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired as err:
            # What it printed before it was killed is the only account of where it hung.
            printed = _text(err.stdout) + _text(err.stderr)
            _log_command(log, cmd, printed, f"killed after {timeout:.0f}s")
            last = [ln.strip() for ln in printed.splitlines() if ln.strip()][-1:]
            raise InfraError(
                f"kwokctl {args[0]} {args[1] if len(args) > 1 else ''} timed out after "
                f"{timeout:.0f}s"
                + (f" (its last line: {log_line(last[0])})" if last else "")
                + self._component_tails(),
                hint=f"see {log} and {self.cluster_dir / 'logs'}",
            ) from err
        _log_command(log, cmd, proc.stdout + proc.stderr, f"exit {proc.returncode}")
        if proc.returncode != 0:
            last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise InfraError(
                f"kwokctl {' '.join(args[:2])} failed: {last[0][:200]}",
                hint=f"see {log} and {self.cluster_dir / 'logs'}",
            )
        return proc.stdout

    def _component_tails(self) -> str:
        """The last line each component logged, for an error that the cluster's removal
        would otherwise leave without its evidence."""
        tails = []
        for component in COMPONENTS:
            log = self.cluster_dir / "logs" / f"{component}.log"
            if log.exists():
                said = last_line(log, limit=4096)  # whole, for a JSON line to parse
                tails.append(f"{component}: {log_line(said) if said else '(empty log)'}")
        return "; last log lines: " + "; ".join(tails) if tails else ""


def default_stages() -> Path:
    return control_plane.component("kwok-stages").path(DEFAULTS_FILE)


def stages_digest() -> str:
    docs = kwok_stages.documents(default_stages())
    return hashlib.sha256(yaml.safe_dump_all(docs, sort_keys=True).encode()).hexdigest()[:16]


def _log_command(log: Path, cmd: Sequence[str], output: str, end: str) -> None:
    """Append a command, what it printed and how it ended (``exit 0``, ``killed after …``)."""
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(cmd)}\n{output}\n({end})\n")


def log_line(line: str, limit: int = 200) -> str:
    """One log line made short: a JSON line (kwokctl's, kwok's) as its level, message and
    error; klog's and others' as they are; at most ``limit`` characters."""
    try:
        record = json.loads(line)
    except ValueError:
        record = None
    if isinstance(record, dict) and "msg" in record:
        parts = [str(record.get("level", "")), str(record["msg"])]
        parts += [f"{k}={record[k]}" for k in ("err", "error", "elapsed") if k in record]
        line = " ".join(p for p in parts if p)
    return line[:limit]


def _text(data: str | bytes | None) -> str:
    """A timed-out child's partial output, whichever type ``subprocess`` left it in."""
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data or ""
