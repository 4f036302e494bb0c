"""The CN pool topology a scenario starts from: one CNPool and its CNClaimSets.

Objects are plain dicts in the operator's API shape (docs/operator-behaviour.md
§13). Every object — and through ``podLabels`` every pool pod, and through the
claim template every claim — carries the run's ``mochaos.io/run-id`` label.
"""

from __future__ import annotations

from typing import Any

from mochaos.ctrl.objects import API_VERSION, CLAIMSET_LABEL, POOL_NAME_LABEL, RUN_ID_LABEL


def cn_pool(name: str, *, run_id: str, max_idle: int) -> dict[str, Any]:
    """A CNPool keeping ``max_idle`` idle CN pods; a real cluster's target overlays its
    template, deps, pod labels and maxPods (mochaos.operator.matrixone.topology.PoolSpec)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "CNPool",
        "metadata": {"name": name, "labels": {RUN_ID_LABEL: run_id}},
        "spec": {
            "template": {"image": "matrixorigin/matrixone:mochaos-model"},
            "podLabels": {RUN_ID_LABEL: run_id},
            "deps": {"logSet": {"metadata": {"name": "mochaos"}}},
            "strategy": {"updateStrategy": {}, "scaleStrategy": {"maxIdle": max_idle}},
        },
    }


def cn_claimset(name: str, *, run_id: str, replicas: int, pool: str) -> dict[str, Any]:
    """A CNClaimSet of ``replicas`` claims that bind pods of ``pool``."""
    return {
        "apiVersion": API_VERSION,
        "kind": "CNClaimSet",
        "metadata": {"name": name, "labels": {RUN_ID_LABEL: run_id}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {CLAIMSET_LABEL: name}},
            "template": {
                "metadata": {
                    "labels": {RUN_ID_LABEL: run_id, CLAIMSET_LABEL: name, POOL_NAME_LABEL: pool}
                },
                "spec": {
                    "selector": {"matchLabels": {POOL_NAME_LABEL: pool}},
                    "poolName": pool,
                },
            },
        },
    }


def cn_claim(name: str, *, run_id: str, pool: str) -> dict[str, Any]:
    """A standalone CNClaim (no claim set) for a pod of ``pool``."""
    return {
        "apiVersion": API_VERSION,
        "kind": "CNClaim",
        "metadata": {"name": name, "labels": {RUN_ID_LABEL: run_id, POOL_NAME_LABEL: pool}},
        "spec": {"selector": {"matchLabels": {POOL_NAME_LABEL: pool}}, "poolName": pool},
    }
