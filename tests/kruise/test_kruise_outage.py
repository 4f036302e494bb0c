"""kruise-manager down: the writes the operator makes through it fail closed. Its webhooks
stay registered, so the apiserver refuses a CloneSet write it cannot have reviewed instead
of taking it with no controller to act on it; the cluster's dependency check names the
outage meanwhile, and once kruise-manager is started again the same write is taken.

On a private cluster: stopping kruise-manager on the session's cluster would break the
other tests using it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException
from test_kruise_manager import GROUP, PLURAL, VERSION, cloneset

from mochaos.binaries import control_plane
from mochaos.cluster.environment import Environment
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.kruise import module
from mochaos.kube import new_api_client

NAMESPACE = "mc-kruise-outage"


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalProvider]:
    if not control_plane.all_built():
        pytest.skip("local binaries not built")
    p = LocalProvider(name=f"mc-safety-{secrets.token_hex(3)}")
    try:
        p.up()
        p.provide(Environment(kruise=module.DEFAULT_VERSION))
        yield p
    finally:
        p.down()
        (p.workdir / f"{p.cluster_name}.lock").unlink(missing_ok=True)


def test_cloneset_writes_fail_closed_while_kruise_manager_is_down(provider: LocalProvider):
    api = new_api_client(provider.kubeconfig_path(), user_agent="mochaos-test/kruise-outage")
    custom = client.CustomObjectsApi(api)
    client.CoreV1Api(api).create_namespace({"metadata": {"name": NAMESPACE}})
    custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, cloneset("cs"))
    check = provider.dependency_checks()["kruise"]
    assert check() is None

    def scale(replicas: int) -> None:
        custom.patch_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, PLURAL, "cs", {"spec": {"replicas": replicas}}
        )

    saved = provider.stop_component("kruise")
    try:
        assert check() is not None, "the outage is not seen"
        with pytest.raises(ApiException) as refused:
            scale(2)
        assert "failed calling webhook" in str(refused.value.body), refused.value.body
    finally:
        provider.start_component(saved)
    assert check() is None
    scale(2)
    live = custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, "cs")
    assert live["spec"]["replicas"] == 2
