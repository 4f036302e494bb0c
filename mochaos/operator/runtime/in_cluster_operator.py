"""The handle on an operator that runs as a Deployment in the cluster (a RunningOperator).

One operator serves every namespace; each test namespace gets its own handle
with its pool spec and SQL sessions. Its faults, named for what they are:

- ``restart``: the pod is deleted gracefully and the Deployment starts a new
  one; the new process waits for the leader lease (up to ~15 s) and relists
  everything. A kill that stays down is undone by a restart too.
- ``kill``: scale the Deployment to 0 and delete the pod with grace period 0:
  no chance to clean up, and no replacement until ``restart`` (or ``stop``).
- ``pause``: freeze the manager's processes on their node for a while (see
  pod_freezer); nothing restarts, the same process resumes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mochaos.errors import InfraError
from mochaos.matrixone.sessions import Sessions
from mochaos.matrixone.waits import Timings
from mochaos.operator.runtime.pod_freezer import Frozen, PodFreezer
from mochaos.operator.runtime.pod_log import LogLine, PodLogFollower
from mochaos.operator.target import MatrixOneFaults, PoolSpec, Waits
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.waiting import wait_for

USER_AGENT = "manager/"
"""Prefix of the operator's user agent in the audit log.

Assumption: the operator does not set its own user agent, so client-go's
default applies: ``<binary>/<version> (<os>/<arch>) kubernetes/<commit>``,
and the chart runs the binary ``/manager``. Its service account
(``system:serviceaccount:<namespace>:<release>-matrixone-operator``) is the
firmer identity and is on :attr:`InClusterOperator.username`.
"""


class InClusterOperator:
    """The operator Deployment seen as a RunningOperator (see the module docstring).

    ``core`` / ``apps`` replace the CoreV1Api / AppsV1Api built from
    ``api_client`` (tests pass fakes); ``freezer`` is None where the nodes are
    out of reach (an existing cluster), and ``pause`` then says so.
    """

    def __init__(
        self,
        *,
        target: str,
        version: str,
        api_client: Any,
        namespace: str,
        deployment: str,
        selector: str,
        log_path: Path | None = None,
        progress: Progress = say,
        core: Any = None,
        apps: Any = None,
        pool_spec: PoolSpec | None = None,
        sessions: Sessions | None = None,
        freezer: PodFreezer | None = None,
        timings: Timings | None = None,
        matrixone: MatrixOneFaults | None = None,
    ) -> None:
        self.target = target
        self.version = version
        self.user_agent = USER_AGENT
        self.interposer = None
        """In the cluster the operator talks to the apiserver directly."""
        self.matrixone = matrixone
        """Faults on the cluster's real MatrixOne, where they can be made (kind: HAKeeper
        hung by freezing the log service, :mod:`.frozen_hakeeper`)."""
        self.username = f"system:serviceaccount:{namespace}:{deployment}"
        self.api = api_client
        self.namespace = namespace
        self.deployment = deployment
        self.selector = selector
        self.log_path = log_path
        self.progress = progress
        self.pool_spec = pool_spec
        self.sessions = sessions
        self.timings = timings or Timings()
        self.waits = Waits.of(self.timings)
        self._core_api = core
        self._apps_api = apps
        self._freezer = freezer
        self._follower = PodLogFollower(
            core=self._core, namespace=namespace, selector=selector,
            started_ns=time.time_ns(), log_path=log_path,
        )  # fmt: skip
        self._frozen: Frozen | None = None
        self._thaw_timer: threading.Timer | None = None
        self._killed_replicas: int | None = None
        self._lock = threading.Lock()

    # -- pods ----------------------------------------------------------------

    def _core(self) -> Any:
        if self._core_api is None:
            from kubernetes import client

            self._core_api = client.CoreV1Api(self.api)
        return self._core_api

    def _apps(self) -> Any:
        if self._apps_api is None:
            from kubernetes import client

            self._apps_api = client.AppsV1Api(self.api)
        return self._apps_api

    def pods(self) -> list[Any]:
        """The operator's pods, newest first."""
        return self._follower.pods()

    # -- log -----------------------------------------------------------------

    def follow_log(self, stop: threading.Event) -> Iterator[LogLine]:
        """The operator's log lines since this handle was made, across restarts, in order."""
        return self._follower.follow(stop)

    # -- faults ----------------------------------------------------------------

    def _delete_pods(self, grace: int | None) -> list[str]:
        names = []
        for pod in self.pods():
            if pod.metadata.deletion_timestamp is None:
                self._core().delete_namespaced_pod(
                    pod.metadata.name,
                    self.namespace,
                    grace_period_seconds=grace,
                    _request_timeout=10,
                )
                names.append(pod.metadata.name)
        return names

    def _wait_replaced(self, old: list[str]) -> None:
        def replaced() -> tuple[bool, str]:
            pod = self._follower.running_pod()
            ready = (
                pod is not None
                and pod.metadata.name not in old
                and any(
                    c.type == "Ready" and c.status == "True" for c in pod.status.conditions or []
                )
            )
            return ready, f"waiting for a new Ready pod (old: {', '.join(old) or 'none'})"

        wait_for(
            replaced,
            what=f"operator {self.deployment}",
            timeout=self.timings.operator_restart,
            hint=f"`kubectl -n {self.namespace} describe deploy/{self.deployment}` shows why",
        )

    def _scale(self, replicas: int) -> None:
        self._apps().patch_namespaced_deployment_scale(
            self.deployment, self.namespace, {"spec": {"replicas": replicas}}, _request_timeout=10
        )

    def restart(self) -> None:
        """Restart the operator: a new pod (leader-lease wait, relist); Ready before returning."""
        with self._lock:
            self._thaw_locked()
            if self._killed_replicas is not None:
                old = [p.metadata.name for p in self.pods()]
                self._scale(self._killed_replicas)
                self._killed_replicas = None
            else:
                old = self._delete_pods(grace=None)
        self._wait_replaced(old)

    def kill(self) -> None:
        """Kill the operator and keep it down: scale to 0, delete its pod without grace."""
        with self._lock:
            self._thaw_locked()
            if self._killed_replicas is None:
                dep = self._apps().read_namespaced_deployment(
                    self.deployment, self.namespace, _request_timeout=10
                )
                self._killed_replicas = dep.spec.replicas or 1
            self._scale(0)
            self._delete_pods(grace=0)

    def pause(self, seconds: float) -> None:
        """Freeze the operator's process for ``seconds`` (returns at once; thaws on a timer)."""
        if self._freezer is None:
            raise InfraError(
                "pausing an in-cluster operator needs its node (kind): not possible here",
                hint="run pause scenarios with --mochaos-cluster=kind, or use restart/kill",
            )
        with self._lock:
            if self._frozen is None:
                pod = self._follower.running_pod()
                if pod is None:
                    raise InfraError(
                        f"no running pod of {self.deployment} to pause",
                        hint=f"`kubectl -n {self.namespace} get pods` shows its state",
                    )
                self._frozen = self._freezer.freeze(pod)
            if self._thaw_timer:
                self._thaw_timer.cancel()
            self._thaw_timer = threading.Timer(seconds, self.resume)
            self._thaw_timer.daemon = True
            self._thaw_timer.start()

    def resume(self) -> None:
        """Thaw a paused operator (no-op when not paused)."""
        with self._lock:
            self._thaw_locked()

    def _thaw_locked(self) -> None:
        if self._thaw_timer:
            self._thaw_timer.cancel()
            self._thaw_timer = None
        if self._frozen is not None and self._freezer is not None:
            frozen, self._frozen = self._frozen, None
            self._freezer.thaw(frozen)

    def stop(self) -> None:
        """End this namespace's use of the shared operator: thaw, bring back, close sessions."""
        with self._lock:
            self._thaw_locked()
            if self._killed_replicas is not None:
                self._scale(self._killed_replicas)
                self._killed_replicas = None
        if self.sessions is not None:
            self.sessions.close()
