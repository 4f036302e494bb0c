"""CRD ownership: mo-chaos replaces only CRDs it installed, never the operator's with its own."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mochaos.crds import (
    KRUISE_OWNER,
    OWNER_LABEL,
    SOURCE_ANNOTATION,
    CrdSet,
    decide,
    operator_crds,
    own_crds,
)
from mochaos.errors import UsageError

OPERATOR = CrdSet("operator", "matrixone-operator 2301e3b", ())
OWN = own_crds()


def crd(owner: str | None = None, source: str = "", **meta) -> dict:
    labels = {OWNER_LABEL: owner} if owner else {}
    return {"metadata": {"name": "cnclaims.core.matrixorigin.io", "labels": labels,
                         "annotations": {SOURCE_ANNOTATION: source, **meta}}}  # fmt: skip


def test_absent_crds_are_installed():
    assert decide(None, OWN) == "install"


def test_the_operators_crds_replace_our_own():
    assert decide(crd("own", OWN.source), OPERATOR) == "replace"


def test_our_own_replace_the_operators_we_installed():
    assert decide(crd("operator", "matrixone-operator 2301e3b"), OWN) == "replace"


def test_the_same_set_is_kept_and_another_build_replaced():
    assert decide(crd("operator", "matrixone-operator 2301e3b"), OPERATOR) == "keep"
    other = CrdSet("operator", "matrixone-operator caee443", ())
    assert decide(crd("operator", "matrixone-operator 2301e3b"), other) == "replace"


def test_a_crd_someone_else_installed_is_refused_naming_the_helm_release():
    helm = crd(None, **{"meta.helm.sh/release-name": "mo"})
    with pytest.raises(UsageError, match="helm:mo/"):
        decide(helm, OPERATOR)
    with pytest.raises(UsageError, match="not by mo-chaos"):
        decide(crd(None), OWN)


def test_own_schemas_carry_the_owner_label():
    assert {d["metadata"]["labels"][OWNER_LABEL] for d in OWN.docs} == {"own"}
    assert {d["spec"]["names"]["kind"] for d in OWN.docs} == {"CNClaim", "CNClaimSet", "CNPool"}


def test_kruises_own_crds_replace_the_copies_an_older_mo_chaos_installed():
    kruise = CrdSet(KRUISE_OWNER, "github.com/openkruise/kruise@v1.4.0 config/crd/bases", ())
    # From the operator's chart (owner operator), and the kruise double's (owner own).
    assert decide(crd("operator", "matrixone-operator 2301e3b"), kruise) == "replace"
    assert decide(crd("own", "mo-chaos kruise double"), kruise) == "replace"
    assert decide(crd(KRUISE_OWNER, kruise.source), kruise) == "keep"


def _crd_file(folder: Path, kind: str, group: str) -> None:
    plural = kind.lower() + "s"
    doc = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": f"{plural}.{group}"},
           "spec": {"group": group, "names": {"kind": kind, "plural": plural}}}  # fmt: skip
    (folder / f"{group}_{plural}.yaml").write_text(yaml.safe_dump(doc))


def test_the_operator_set_leaves_openkruise_crds_to_kruise(tmp_path: Path):
    for kind in ("CNClaim", "CNClaimSet", "CNPool", "LogSet", "DNSet", "CNSet"):
        _crd_file(tmp_path, kind, "core.matrixorigin.io")
    _crd_file(tmp_path, "CloneSet", "apps.kruise.io")
    names = operator_crds(tmp_path, source="x").names
    assert "cnclaims.core.matrixorigin.io" in names
    assert not [n for n in names if n.endswith(".kruise.io")]


def test_a_directory_without_the_operators_kinds_is_refused(tmp_path: Path):
    with pytest.raises(UsageError, match="lacks the CRDs of"):
        operator_crds(tmp_path, source="x")


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
        ({"labels": {OWNER_LABEL: "own"}}, "mochaos:own"),
        ({"labels": {OWNER_LABEL: "operator"}}, "mochaos:operator"),
        ({"managedFields": [{"manager": "kubectl-client-side-apply"}]},
         "manager:kubectl-client-side-apply"),
        ({}, "unknown"),
    ],
)  # fmt: skip
def test_crd_owner(meta, owner):
    from mochaos.crds import crd_owner

    assert crd_owner({"metadata": meta}) == owner


def test_the_chart_may_not_run_over_our_crds_local(cluster, kube):
    from mochaos.crds import check_chart_can_own_crds, install

    install(cluster, own_crds())
    with pytest.raises(UsageError, match="was installed by mo-chaos"):
        check_chart_can_own_crds(kube)


def test_a_crd_mo_chaos_applied_without_the_label_is_ours_to_replace():
    applied = {"metadata": {"name": "dnsets.core.matrixorigin.io",
                            "managedFields": [{"manager": "mochaos"}]}}  # fmt: skip
    assert decide(applied, OPERATOR) == "replace"
