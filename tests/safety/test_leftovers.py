"""The sweep between qualify targets: everything a target may leave on the local cluster is
found, named and removed; nothing is touched while another process uses the cluster.

On a private cluster, started by a child process (which exits: nobody uses it then), with
leftovers planted the way a broken or killed run leaves them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from mochaos import crds
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.kube import Cluster, api_client
from mochaos.operator.leftovers import sweep
from mochaos.operator.webhooks import admission as webhooks
from mochaos.operator.webhooks.host import spawn
from mochaos.paths import state_dir
from mochaos.procs import start_time

from support.child_runs import (
    ROOT,
    child_env,
    dead_pid,
    needs_binaries,
    private_cluster_name,
    remove_private_cluster,
)
from support.polling import wait_until

pytestmark = needs_binaries
CLONESETS = "clonesets.apps.kruise.io"
WIDGETS = "widgets.apps.example.io"


def _crd(plural: str, group: str, kind: str) -> dict:
    """A minimal namespaced CRD (any object accepted)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "kind": kind, "singular": kind.lower()},
                 "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}]},
    }  # fmt: skip


@pytest.fixture(scope="module")
def swept_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A private cluster in a private state folder (the sweep reaps dead runs: only its
    own), running, used by no process; the sweep's default cluster."""
    name = private_cluster_name()
    state = tmp_path_factory.mktemp("sweep-state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MOCHAOS_STATE", str(state))
        patch.setenv("MOCHAOS_CLUSTER_NAME", name)
        try:
            up = subprocess.run([sys.executable, "-m", "mochaos", "cluster", "up"], cwd=ROOT,
                                env=child_env(), capture_output=True, text=True,
                                timeout=600)  # fmt: skip
            assert up.returncode == 0, up.stderr[-3000:]
            cluster = LocalProvider(name=name).current()
            assert cluster is not None
            yield cluster
        finally:
            remove_private_cluster(name)


def _namespace(api: client.ApiClient, name: str) -> None:
    client.CoreV1Api(api).create_namespace(
        {"metadata": {"name": name, "labels": {RUN_ID_LABEL: "gone-run"}}}
    )


def _exists(read) -> bool:
    try:
        read()
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True


def _plant(cluster: Cluster, tmp_path: Path) -> dict[str, int]:
    """Leave what a broken run leaves; the pids of the processes left running."""
    assert cluster.state_dir is not None
    with api_client(cluster.kubeconfig, user_agent="mochaos/test") as api:
        _namespace(api, "mc-left-behind")
        _namespace(api, "mc-dead-runs")
    crds.install(cluster, crds.own_crds())
    # A CRD a target installed, and OpenKruise's as the cluster's kruise-manager installs them.
    widgets = _crd("widgets", "apps.example.io", "Widget")
    crds.install(cluster, crds.CrdSet("operator", "an operator's", (widgets,)))
    clonesets = _crd("clonesets", "apps.kruise.io", "CloneSet")
    crds.install(cluster, crds.CrdSet(crds.KRUISE_OWNER, "kruise's module", (clonesets,)))
    ca = (webhooks.make_certificates(tmp_path / "certs") / "caBundle").read_bytes()
    hook = webhooks.Hook("/mutate-x", "core.matrixorigin.io", "v1alpha1", "cnclaims", True)
    webhooks.register(cluster, webhooks.configurations([hook], ca, port=1))
    # A webhook host whose users are all gone (killed), still running.
    host = spawn(["sleep", "300"], {"PATH": "/usr/bin:/bin"}, tmp_path / "host.log")
    state = cluster.state_dir / "operator-webhooks"
    state.mkdir(parents=True, exist_ok=True)
    (state / "host.json").write_text(json.dumps({**host.record(), "build": "b" * 12}))
    # A dead run's record: a process it started, and its namespace.
    sleeper = subprocess.Popen(["sleep", "300"])
    dead = dead_pid()
    (state_dir() / "runs").mkdir(parents=True, exist_ok=True)
    (state_dir() / "runs" / f"{dead}.json").write_text(json.dumps({
        "owner": dead, "owner_cmdline": ["pytest", "gone"],
        "pids": {str(sleeper.pid): {"argv": ["sleep", "300"], "started": start_time(sleeper.pid)}},
        "namespaces": {"mc-dead-runs": {"kubeconfig": str(cluster.kubeconfig), "context": None}},
    }))  # fmt: skip
    return {"host": host.pid, "run": sleeper.pid}


def test_the_sweep_names_and_removes_every_leftover(swept_cluster: Cluster, tmp_path: Path):
    pids = _plant(swept_cluster, tmp_path)
    found = sweep("after test", provider="local")
    assert not found.unchecked, found
    text = "\n".join(found.left)
    for needle in ("stale process", "stale namespace mc-dead-runs", "webhook host of operator",
                   "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
                   "namespace mc-left-behind"):  # fmt: skip
        assert needle in text, (needle, found.left)
    assert found.removed == ["1 CRDs (an operator's)", "3 CRDs (mo-chaos minimal schemas)"]
    assert "LEFT" in found.line() and not found.clean
    wait_until(lambda: all(start_time(p) is None for p in pids.values()), timeout=30,
               what="the leftover processes gone")  # fmt: skip
    with api_client(swept_cluster.kubeconfig, user_agent="mochaos/test") as api:
        ext = client.ApiextensionsV1Api(api)
        assert not _exists(
            lambda: ext.read_custom_resource_definition("cnclaims.core.matrixorigin.io")
        )
        core = client.CoreV1Api(api)
        assert not _exists(lambda: core.read_namespace("mc-left-behind"))
        assert not _exists(lambda: ext.read_custom_resource_definition(WIDGETS))
        kept = ext.read_custom_resource_definition(CLONESETS).metadata.labels
        assert kept[crds.OWNER_LABEL] == crds.KRUISE_OWNER, "kruise's CRD was not kept"
    wait_until(LocalProvider(name=swept_cluster.name).is_healthy, timeout=60,
               what="the cluster healthy after the sweep")  # fmt: skip
    again = sweep("after test", provider="local")
    assert again.clean and not again.removed, again


def test_nothing_is_swept_while_another_process_uses_the_cluster(swept_cluster: Cluster):
    with api_client(swept_cluster.kubeconfig, user_agent="mochaos/test") as api:
        _namespace(api, "mc-in-use")
    user = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from mochaos.cluster.local.local_provider import "
         "LocalProvider; LocalProvider().up(); print('up', flush=True); time.sleep(120)"],
        env=child_env(MOCHAOS_CLUSTER_NAME=swept_cluster.name), stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert user.stdout is not None and user.stdout.readline().strip() == "up"
        found = sweep("after test", provider="local")
        assert found.unchecked.startswith(f"other processes use cluster {swept_cluster.name}")
        assert str(user.pid) in found.unchecked and not found.left
        with api_client(swept_cluster.kubeconfig, user_agent="mochaos/test") as api:
            assert _exists(lambda: client.CoreV1Api(api).read_namespace("mc-in-use"))
    finally:
        user.kill()
        user.wait()
    assert "mc-in-use" in "\n".join(sweep("after test", provider="local").left)


def test_other_providers_are_not_swept():
    assert sweep("after x", provider="kind").line() == (
        "after x: not checked (only the local cluster is swept, not kind)"
    )
