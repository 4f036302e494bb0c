"""Client sessions on a CN, for targets whose MatrixOne is the reference model's stand-in.

The reference model plays MatrixOne's query service by reading the session count from
the pod's ``matrixorigin.io/score`` annotation (the form the real CN-store controller
writes after asking the query service). Only the model reads that annotation; the real
operator gets sessions from the MatrixOne double (local cluster) or real SQL sessions
(kind), each behind the same :class:`mochaos.types.Sessions` interface.
"""

from __future__ import annotations

import json

from kubernetes import client

from mochaos.kube import api_client
from mochaos.types import SCORE_ANNOTATION, Cluster


class ScoreAnnotationSessions:
    """Sessions of the model's CN stand-in: the score annotation the model reads."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self._cluster = cluster
        self._namespace = namespace

    def set(self, pod: str, count: int) -> int | None:
        """Publish ``count`` sessions on ``pod``; return the write's resourceVersion."""
        score = json.dumps(
            {"sessionCount": count, "pipelineCount": 0, "replicaCount": 0}, separators=(",", ":")
        )
        body = {"metadata": {"annotations": {SCORE_ANNOTATION: score}}}
        with api_client(
            self._cluster.kubeconfig, user_agent="mochaos/chaos", context=self._cluster.context
        ) as api:
            pod_obj = client.CoreV1Api(api).patch_namespaced_pod(pod, self._namespace, body)
        rv = pod_obj.metadata.resource_version
        return int(rv) if rv else None
