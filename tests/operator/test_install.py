"""Who owns the claim CRDs: we never overwrite the chart's, the chart never runs over ours."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from mochaos.errors import EXIT_USAGE, UsageError
from mochaos.operator import install
from mochaos.operator.install import (
    CLAIM_CRDS,
    claim_crd_owners,
    crd_owner,
    refuse_chart_crds,
    refuse_own_crds,
)

HELM_META = {
    "labels": {"app.kubernetes.io/managed-by": "Helm"},
    "annotations": {"meta.helm.sh/release-name": "mo",
                    "meta.helm.sh/release-namespace": "mo-system"},
}  # fmt: skip


@pytest.mark.parametrize(
    ("meta", "owner"),
    [
        (HELM_META, "helm:mo/mo-system"),
        ({"annotations": {"meta.helm.sh/release-name": "qa"}}, "helm:qa/?"),
        ({"labels": {"mochaos.io/schema": "own"}}, "mochaos"),
        ({"managedFields": [{"manager": "mochaos"}]}, "mochaos"),
        (
            {"managedFields": [{"manager": "kubectl-client-side-apply"}]},
            "manager:kubectl-client-side-apply",
        ),
        ({}, "unknown"),
    ],
    ids=["helm", "helm-annotation-only", "own-schema", "applied-by-us", "kubectl", "unknown"],
)
def test_crd_owner_of_a_dict(meta: dict[str, Any], owner: str) -> None:
    assert crd_owner({"metadata": meta}) == owner


def test_crd_owner_of_an_api_object() -> None:
    meta = SimpleNamespace(labels=HELM_META["labels"], annotations=HELM_META["annotations"],
                           managed_fields=[SimpleNamespace(manager="helm")])  # fmt: skip
    assert crd_owner(SimpleNamespace(metadata=meta)) == "helm:mo/mo-system"


class FakeExt:
    """ApiextensionsV1Api stand-in holding some CRDs."""

    def __init__(self, crds: dict[str, dict[str, Any]]) -> None:
        self.crds = crds
        self.patched: list[str] = []

    def read_custom_resource_definition(self, name: str) -> Any:
        if name not in self.crds:
            raise ApiException(status=404, reason="Not Found")
        return {"metadata": self.crds[name]}

    def patch_custom_resource_definition(self, *, name: str, **kw: Any) -> None:
        self.patched.append(name)


def test_claim_crd_owners_reads_each_present_crd() -> None:
    ext = FakeExt(
        {CLAIM_CRDS[0]: HELM_META, CLAIM_CRDS[2]: {"labels": {"mochaos.io/schema": "own"}}}
    )
    assert claim_crd_owners(ext) == {CLAIM_CRDS[0]: "helm:mo/mo-system", CLAIM_CRDS[2]: "mochaos"}


def test_our_schemas_never_replace_the_charts_crds() -> None:
    with pytest.raises(UsageError) as info:
        refuse_chart_crds({CLAIM_CRDS[1]: "mochaos", CLAIM_CRDS[0]: "helm:mo/mo-system"})
    assert str(info.value) == (
        "CRD cnclaims.core.matrixorigin.io was installed by helm:mo/mo-system (the operator's "
        "chart); mo-chaos will not replace it with its own schema: run model:/binary: targets on "
        "a cluster without the chart (e.g. --cluster=local), or use --operator=installed"
    )
    assert info.value.exit_code == EXIT_USAGE
    refuse_chart_crds({CLAIM_CRDS[0]: "mochaos", CLAIM_CRDS[1]: "manager:kubectl"})
    refuse_chart_crds({})


def test_the_chart_may_install_where_no_crd_or_only_its_own_is_present() -> None:
    refuse_own_crds({})
    refuse_own_crds({name: "helm:mo/mo-system" for name in CLAIM_CRDS})
    with pytest.raises(UsageError, match=r"cnpools\.core\.matrixorigin\.io holds mo-chaos's own"):
        refuse_own_crds({CLAIM_CRDS[2]: "mochaos", CLAIM_CRDS[0]: "helm:mo/mo-system"})


def test_the_chart_may_not_run_over_our_crds_local(cluster, kube) -> None:
    install.apply_crds(cluster)
    with pytest.raises(UsageError, match="holds mo-chaos's own schema"):
        install.check_chart_can_own_crds(kube)
