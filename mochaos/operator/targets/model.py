"""``model:<profile>``: the reference operator model as one process per test namespace."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kubernetes import client

from mochaos.cluster.environment import Environment
from mochaos.config import CheckOptions
from mochaos.crds import install, own_crds
from mochaos.ctrl.mo_components import HAKEEPER
from mochaos.ctrl.objects import SCORE_ANNOTATION
from mochaos.errors import InfraError, UsageError
from mochaos.kube import Cluster, api_client
from mochaos.matrixone.waits import DRAIN_MIN
from mochaos.model.matrixone_faults import write_fault
from mochaos.model.profiles import ALIASES, PROFILES, valid_names
from mochaos.operator.runtime.process import OperatorProcess
from mochaos.operator.runtime.via_interposer import interposer_for
from mochaos.operator.target import Waits

NAMESPACE_DELETION_SLACK = 20.0
"""Seconds of a test namespace's deletion that no time scale shortens: Kubernetes'
namespace controller starts 5 s after the deletion (``namespaceDeletionGracePeriod``) and
then deletes the namespace's objects in rounds, the model finalizing each kind in turn.
With 5 s, at ``--time-scale 0.2`` (7 s in all) the model was often stopped before it had
finalized its claim sets and pool, whose finalizers mo-chaos then had to release."""


def model_waits(time_scale: float) -> Waits:
    """The model's intervals are the operator's, time-scaled; a few seconds of slack on top."""
    s = CheckOptions(time_scale=time_scale).scaled
    return Waits(
        # a pool pod scaled in is held by the CloneSet's pre-delete hook through its drain
        # (the minimum delay, requeued once more) before its slot is given back (model/pool.py)
        pool_ready=s(60 + 2 * DRAIN_MIN) + 30,
        bind=s(60) + 30,
        deletion_cost=s(45) + 10,
        migration_phase=s(120) + 10,
        log_line=s(30) + 10,
        teardown=s(10) + NAMESPACE_DELETION_SLACK,
    )


KWOK_NODE_LABEL = ("type", "kwok")
"""The label of kwok's fake nodes on the embedded cluster (the model's pods go there)."""


def pod_image_for(cluster: Cluster) -> str | None:
    """The image the model's pool pods run with on ``cluster`` (:func:`pod_image_of` its
    nodes)."""
    with api_client(cluster.kubeconfig, user_agent="mochaos/setup", context=cluster.context) as api:
        try:
            found = client.CoreV1Api(api).list_node(_request_timeout=30).items
        except client.ApiException as err:
            raise UsageError(
                f"cannot list the nodes of cluster {cluster.name} ({err.status} {err.reason}): "
                "the model places its pool's pods by them",
                hint="use a kubeconfig that may list nodes",
            ) from err
        nodes = api.sanitize_for_serialization(found)
    return pod_image_of(nodes, cluster=cluster.name)


def pod_image_of(nodes: list[dict[str, Any]], *, cluster: str) -> str | None:
    """None when kwok's fake nodes are among ``nodes`` (they run nothing: the embedded
    cluster), else a pause image the nodes already have (kubelet reports them in
    ``status.images``; kind's nodes preload the one containerd's sandboxes use), so the pods
    run on real nodes without a pull. InfraError when no node has one."""
    key, value = KWOK_NODE_LABEL
    if any(node.get("metadata", {}).get("labels", {}).get(key) == value for node in nodes):
        return None
    for node in nodes:
        for image in node.get("status", {}).get("images") or []:
            for name in image.get("names") or []:
                if "@" not in name and name.rsplit("/", 1)[-1].split(":", 1)[0] == "pause":
                    return str(name)
    raise InfraError(
        f"no node of cluster {cluster} reports a pause image: the model's pool pods run "
        "with one its nodes already have",
        hint="on a cluster without one, qualify an operator image instead of model:",
    )


class ScoreAnnotationSessions:
    """Sessions as the model reads them: it plays MatrixOne's query service by reading the
    pod's ``matrixorigin.io/score`` annotation (the form the real CN-store controller
    writes after asking the query service). Only the model reads it; the real operator gets
    sessions from the MatrixOne double (local) or real SQL sessions (kind)."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self._cluster = cluster
        self._namespace = namespace

    def hold(self, pod: str, n: int) -> int | None:
        """Publish ``n`` sessions on ``pod``; return the write's resourceVersion."""
        score = json.dumps(
            {"sessionCount": n, "pipelineCount": 0, "replicaCount": 0}, separators=(",", ":")
        )
        body = {"metadata": {"annotations": {SCORE_ANNOTATION: score}}}
        with api_client(
            self._cluster.kubeconfig, user_agent="mochaos/chaos", context=self._cluster.context
        ) as api:
            pod_obj = client.CoreV1Api(api).patch_namespaced_pod(pod, self._namespace, body)
        rv = pod_obj.metadata.resource_version
        return int(rv) if rv else None

    def close(self) -> None:
        """Nothing to release: the annotation goes with the pod."""


class ModelFaults:
    """The model's own MatrixOne made unreachable: components written into the fault file
    the model reads before each call to MatrixOne (mochaos.model.matrixone_faults).
    Implements mochaos.operator.target.MatrixOneFaults for HAKeeper only: the model's
    query services are the score annotation the scenario writes, and it has no lock
    service."""

    components = (HAKEEPER,)

    def __init__(self, path: Path) -> None:
        self.path = path

    def down(self, component: str, *, how: str) -> str:
        """Take ``component`` down in the model (UsageError: a component it does not play)."""
        if component not in self.components:
            raise UsageError(
                f"the model cannot make {component} unreachable: it plays HAKeeper only (its "
                "query services are the score annotation the scenario writes; it has no lock "
                "service)",
                hint="fault the lock service or a query service on a real manager",
            )
        write_fault(self.path, component, how)
        return f"the model's {component}"

    def up(self, component: str) -> None:
        """Bring ``component`` back in the model."""
        write_fault(self.path, component, None)


class ModelTarget:
    """Installs our CRDs and starts ``python -m mochaos.model`` per namespace."""

    images: tuple[str, ...] = ()
    crds = "own"
    time_scaled = True
    environment = Environment()
    """The model makes its pods itself: no workload controller, no MatrixOne double."""
    matrixone_components = ModelFaults.components

    def __init__(self, *, profile: str, time_scale: float = 1.0, interposer: str = "on") -> None:
        if profile not in PROFILES and profile not in ALIASES:
            raise UsageError(
                f"unknown model profile {profile!r}",
                hint=f"use model:<p> with p one of {valid_names()}",
            )
        self.profile = profile
        self.time_scale = time_scale
        self.interposer = interposer
        """``--mochaos-interposer``: on, the model talks to the apiserver through one."""
        self._pod_image: str | None = None
        self.spec = f"model:{profile}"
        self.version = f"model-{profile}"

    def install(self, cluster: Cluster) -> None:
        """Install the CNClaim / CNClaimSet / CNPool CRDs (ours, unless the operator's are)
        and see where the pool's pods can run (:func:`pod_image_for`)."""
        install(cluster, own_crds())
        self._pod_image = pod_image_for(cluster)

    def start(self, cluster: Cluster, namespace: str, log_dir: Path) -> OperatorProcess:
        """Start the model for one namespace and wait until its informers synced."""
        ready_file = log_dir / "operator.ready"
        user_agent = f"matrixone-operator-model/{self.profile}"
        via = interposer_for(cluster, log_dir, mode=self.interposer)
        faults = ModelFaults(log_dir / "matrixone-faults.json")
        command = [
            sys.executable, "-m", "mochaos.model",
            "--profile", self.profile,
            "--kubeconfig", str(via.kubeconfig if via else cluster.kubeconfig),
            "--namespace", namespace,
            "--log-file", str(log_dir / "operator.log"),
            "--ready-file", str(ready_file),
            "--time-scale", repr(self.time_scale),
            "--user-agent", user_agent,
            "--matrixone-faults", str(faults.path),
        ]  # fmt: skip
        if self._pod_image is not None:
            command += ["--pod-image", self._pod_image]
        if cluster.context and via is None:
            command += ["--context", cluster.context]
        proc = OperatorProcess(
            target=self.spec,
            version=self.version,
            user_agent=user_agent,
            command=command,
            log_path=log_dir / "operator.log",
            ready_file=ready_file,
            sessions=ScoreAnnotationSessions(cluster, namespace),
            waits=model_waits(self.time_scale),
            interposer=via,
            matrixone=faults,
        )
        try:
            proc.start()
        except BaseException:
            proc.stop()
            raise
        return proc

    def close(self) -> None:
        """Nothing is held between tests."""


def from_spec(value: str, options: dict[str, Any]) -> ModelTarget:
    """``model:<profile>``."""
    return ModelTarget(profile=value, time_scale=float(options.get("time_scale") or 1.0),
                       interposer=str(options.get("interposer") or "on"))  # fmt: skip
