"""Helpers of the model's cluster tests: run the model as a process, write objects, wait.

Waits are written in operator seconds and scaled by the model's ``--time-scale``, so a
test reads like the operator's own timeline ("gone within 5 s", "still there after 20 s").
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

from mochaos.ctrl.rest import CLAIMS, CLAIMSETS, PODS, POOLS, Kube, NotFound, Obj

T = TypeVar("T")

SCALE = 0.1
POOL_LABEL = "mochaos.io/pool"
PHASE = "pool.matrixorigin.io/phase"
CLAIMED_BY = "pool.matrixorigin.io/claimed-by"
READY_TIMEOUT = 30.0
MIN_WAIT = 2.0


@dataclass
class ModelProcess:
    """A running ``python -m mochaos.model``."""

    proc: subprocess.Popen
    log_path: Path
    stderr_path: Path
    profile: str

    def records(self) -> list[dict[str, Any]]:
        """Every JSON log line written so far."""
        if not self.log_path.exists():
            return []
        out = []
        for line in self.log_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line))
        return out

    def lines(self, msg: str, *, name: str | None = None) -> list[dict[str, Any]]:
        """Log records with exactly this message (and reconciled object name)."""
        return [
            r for r in self.records() if r["msg"] == msg and (name is None or r.get("name") == name)
        ]

    def quiet_since(self, name: str) -> float:
        """Wall seconds since the last log line about the object ``name``."""
        stamps = [r["ts"] for r in self.records() if r.get("name") == name]
        if not stamps:
            return float("inf")
        return time.time() - datetime.fromisoformat(stamps[-1].replace("Z", "+00:00")).timestamp()

    def pause(self) -> None:
        """SIGSTOP the model."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT the model."""
        os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self, timeout: float = 5.0) -> int:
        """SIGTERM the model and return its exit status (killed after ``timeout``)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def start_model(
    *,
    kubeconfig: Path,
    namespace: str,
    profile: str,
    workdir: Path,
    scale: float = SCALE,
    extra: tuple[str, ...] = (),
) -> ModelProcess:
    """Start the model for one namespace and wait until it logged that it is ready."""
    log_path = workdir / f"model-{profile}.log"
    ready = workdir / f"model-{profile}.ready"
    stderr_path = workdir / f"model-{profile}.stderr"
    cmd = [
        sys.executable,
        "-m",
        "mochaos.model",
        "--profile",
        profile,
        "--kubeconfig",
        str(kubeconfig),
        "--namespace",
        namespace,
        "--log-file",
        str(log_path),
        "--ready-file",
        str(ready),
        "--time-scale",
        str(scale),
        *extra,
    ]
    with stderr_path.open("w") as err:
        proc = subprocess.Popen(cmd, stderr=err, stdout=subprocess.DEVNULL)
    model = ModelProcess(proc=proc, log_path=log_path, stderr_path=stderr_path, profile=profile)
    deadline = time.monotonic() + READY_TIMEOUT
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            model.stop()
            raise RuntimeError(f"model did not start: {stderr_path.read_text()[-2000:]}")
        time.sleep(0.05)
    return model


@dataclass
class Scene:
    """Objects of one test namespace, written and read straight from the apiserver."""

    api: Kube
    namespace: str
    scale: float = SCALE
    notes: list[str] = field(default_factory=list)

    def wall(self, op_seconds: float) -> float:
        """Operator seconds → wall seconds."""
        return op_seconds * self.scale

    # -------------------------------------------------------------- objects

    def create_pool(self, name: str, *, max_idle: int) -> Obj:
        """A CNPool whose pods carry ``mochaos.io/pool=<name>``."""
        return self.api.create(
            POOLS,
            self.namespace,
            {
                "apiVersion": POOLS.api_version,
                "kind": "CNPool",
                "metadata": {"name": name},
                "spec": {
                    "template": {},
                    "podLabels": {POOL_LABEL: name},
                    "deps": {"logSet": {"name": "mo"}},
                    "strategy": {"updateStrategy": {}, "scaleStrategy": {"maxIdle": max_idle}},
                },
            },
        )

    def create_claim(self, name: str, *, pool: str, **spec: Any) -> Obj:
        """A CNClaim selecting the pool's pods."""
        return self.api.create(
            CLAIMS,
            self.namespace,
            {
                "apiVersion": CLAIMS.api_version,
                "kind": "CNClaim",
                "metadata": {"name": name},
                "spec": {"selector": {"matchLabels": {POOL_LABEL: pool}}, **spec},
            },
        )

    def create_claimset(self, name: str, *, pool: str, replicas: int) -> Obj:
        """A CNClaimSet of ``replicas`` claims on the pool."""
        return self.api.create(
            CLAIMSETS,
            self.namespace,
            {
                "apiVersion": CLAIMSETS.api_version,
                "kind": "CNClaimSet",
                "metadata": {"name": name},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"matrixorigin.io/claimset": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}},
                        "spec": {"selector": {"matchLabels": {POOL_LABEL: pool}}},
                    },
                },
            },
        )

    def get(self, kind, name: str) -> Obj | None:
        """The object, or None when it does not exist."""
        try:
            return self.api.get(kind, self.namespace, name)
        except NotFound:
            return None

    def claim(self, name: str) -> Obj | None:
        """A CNClaim, or None."""
        return self.get(CLAIMS, name)

    def pod(self, name: str) -> Obj | None:
        """A Pod, or None."""
        return self.get(PODS, name)

    def pods(self) -> list[Obj]:
        """All pods of the namespace."""
        return self.api.list(PODS, self.namespace).get("items", [])

    def claims(self) -> list[Obj]:
        """All claims of the namespace."""
        return self.api.list(CLAIMS, self.namespace).get("items", [])

    def idle_pods(self) -> list[Obj]:
        """Live pods labelled Idle."""
        return [
            p
            for p in self.pods()
            if labels(p).get(PHASE) == "Idle" and not p["metadata"].get("deletionTimestamp")
        ]

    def merge_claim(self, name: str, patch: Obj) -> Obj:
        """Merge-patch a claim (no optimistic lock, like ``kubectl patch --type merge``)."""
        return self.api.merge_patch(CLAIMS, self.namespace, name, patch)

    def migrate(self, claim_name: str, target: Obj) -> Obj:
        """What the unit-agent does: sourcePod = current pod, podName/nodeName = target."""
        spec = self.claim(claim_name)["spec"]
        return self.merge_claim(
            claim_name,
            {
                "spec": {
                    "sourcePod": {"podName": spec["podName"], "nodeName": spec.get("nodeName", "")},
                    "podName": target["metadata"]["name"],
                    "nodeName": target["spec"].get("nodeName", ""),
                }
            },
        )

    def set_pod_labels(self, name: str, values: dict[str, str | None]) -> Obj:
        """Merge-patch pod labels (None deletes a label)."""
        return self.api.merge_patch(PODS, self.namespace, name, {"metadata": {"labels": values}})

    def delete(self, kind, name: str) -> None:
        """Delete an object."""
        self.api.delete(kind, self.namespace, name)

    def scale_claimset(self, name: str, replicas: int) -> Obj:
        """Set spec.replicas through the scale subresource, as ``kubectl scale`` does."""
        return self.api.request(
            "PATCH",
            CLAIMSETS.path(self.namespace, name, "scale"),
            body={"spec": {"replicas": replicas}},
            content_type="application/merge-patch+json",
        )

    # -------------------------------------------------------------- waiting

    def wait(self, what: str, check: Callable[[], T], *, op_seconds: float) -> T:
        """Poll ``check`` until it returns a truthy value; fail naming ``what`` otherwise.

        The deadline is ``op_seconds`` scaled, but never below MIN_WAIT wall seconds: a step
        the operator takes "at once" still needs a watch round trip on a loaded machine.
        """
        poll = Retrying(
            stop=stop_after_delay(max(self.wall(op_seconds), MIN_WAIT)),
            wait=wait_fixed(0.05),
            retry=retry_if_result(lambda r: not r),
        )
        try:
            return poll(check)
        except RetryError:
            raise AssertionError(f"{what}: not within {op_seconds} operator seconds") from None

    def holds(self, what: str, check: Callable[[], bool], *, op_seconds: float) -> None:
        """Assert that ``check`` stays true for ``op_seconds`` (polled)."""
        deadline = time.monotonic() + self.wall(op_seconds)
        while time.monotonic() < deadline:
            assert check(), f"{what}: broke before {op_seconds} operator seconds passed"
            time.sleep(0.05)

    def bound_claim(self, name: str, *, op_seconds: float = 60) -> Obj:
        """Wait until a claim is Bound to a pod labelled for it; the claim."""

        def bound() -> Obj | None:
            c = self.claim(name)
            if not c or c.get("status", {}).get("phase") != "Bound":
                return None
            pod = self.pod(c["spec"].get("podName", ""))
            return c if pod and labels(pod).get(CLAIMED_BY) == name else None

        return self.wait(f"claim {name} bound", bound, op_seconds=op_seconds)

    def settle(self, model: ModelProcess, *names: str, quiet: float = 8) -> None:
        """Wait until the model has not reconciled any of ``names`` for ``quiet`` operator
        seconds, so a chaos action lands on a settled claim, as in production. The passes
        that follow a bind — its own writes, and the 5 s ReSync that Forget does not cancel —
        are then over.
        """
        self.wait(
            f"{', '.join(names)} settle",
            lambda: all(model.quiet_since(n) >= self.wall(quiet) for n in names),
            op_seconds=60,
        )

    def idle_count(self, n: int, *, op_seconds: float = 90) -> list[Obj]:
        """Wait until at least ``n`` pods are Idle; the idle pods."""
        return self.wait(
            f"{n} idle pods",
            lambda: (pods := self.idle_pods()) and len(pods) >= n and pods,
            op_seconds=op_seconds,
        )


def annotations(obj: Obj | None) -> dict[str, str]:
    """metadata.annotations of an object (empty when absent)."""
    return (obj or {}).get("metadata", {}).get("annotations") or {}


def labels(obj: Obj | None) -> dict[str, str]:
    """metadata.labels of an object (empty when absent)."""
    if not obj:
        return {}
    return obj.get("metadata", {}).get("labels") or {}
