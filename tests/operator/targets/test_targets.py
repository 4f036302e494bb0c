"""The in-cluster targets: ``image:<ref>`` (installed by the chart) and ``installed``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos import exits
from mochaos.errors import InfraError, UsageError
from mochaos.matrixone.storage import MINIO_IMAGE
from mochaos.matrixone.topology import DEFAULT_MO_IMAGE
from mochaos.operator import parse_target
from mochaos.operator.provenance.helm import KRUISE_IMAGE, ChartOptions
from mochaos.operator.targets.chart import ImageTarget
from mochaos.operator.targets.installed import InstalledTarget
from mochaos.tooling.runner import RecordingRunner

REF = "matrixorigin/matrixone-operator:nightly-abc1234-20260601"


def _fake_helm_path(tmp_path: Path) -> str:
    d = tmp_path / "bin"
    d.mkdir()
    (d / "helm").write_text("#!/bin/sh\n")
    (d / "helm").chmod(0o755)
    return str(d)


def test_image_target_spec_version_and_images() -> None:
    target = ImageTarget(ref=REF)
    assert target.spec == f"image:{REF}"
    assert target.version == "nightly-abc1234-20260601"
    assert (target.repository, target.tag) == ("matrixorigin/matrixone-operator", target.version)
    assert target.images == (REF, DEFAULT_MO_IMAGE, KRUISE_IMAGE)
    assert target.mo_version == "1.2.3"
    assert ImageTarget(ref=REF, minio="in-cluster").images[-1] == MINIO_IMAGE


def test_image_target_refuses_bad_input() -> None:
    with pytest.raises(UsageError, match="uses a digest") as info:
        ImageTarget(ref="matrixorigin/matrixone-operator@sha256:" + "0" * 64)
    assert info.value.exit_code == exits.USAGE
    with pytest.raises(UsageError, match="unknown MinIO mode 'cloud'"):
        ImageTarget(ref=REF, minio="cloud")


def test_a_nightly_matrixone_image_needs_its_version_before_anything_runs() -> None:
    nightly = "matrixorigin/matrixone:nightly-4a4c2b8c"
    with pytest.raises(UsageError, match=r"pass --mochaos-mo-version=<x\.y\.z>"):
        parse_target(f"image:{REF}", {"mo_image": nightly, "cluster": "kind"})
    options = {"mo_image": nightly, "mo_version": "2.1.0", "cluster": "kind"}
    target = parse_target(f"image:{REF}", options)
    assert isinstance(target, ImageTarget)
    assert (target.mo_image, target.mo_version) == (nightly, "2.1.0")
    installed = parse_target("installed", {"mo_image": nightly, "mo_version": "2.1"})
    assert isinstance(installed, InstalledTarget)
    assert installed.mo_version == "2.1.0"


def test_installed_target_defaults() -> None:
    target = InstalledTarget()
    assert (target.spec, target.version, target.mo_image, target.mo_version) == (
        "installed", "unknown", DEFAULT_MO_IMAGE, "1.2.3",
    )  # fmt: skip


def test_image_target_refuses_our_own_crds_before_helm_runs_local(cluster, kube, tmp_path) -> None:
    from mochaos.crds import install, own_crds
    from mochaos.kube import new_api_client

    install(cluster, own_crds())  # as a model: run on the same cluster would have
    runner = RecordingRunner({"helm version": "v3.22.0+g1\n"})
    target = ImageTarget(
        ref=REF, chart=ChartOptions(ready_timeout=0.5), runner=runner,
        search_path=_fake_helm_path(tmp_path), state=tmp_path / "state",
        client_factory=lambda c: new_api_client(c.kubeconfig, user_agent="mochaos/test"),
        progress=lambda line: None,
    )  # fmt: skip
    with pytest.raises(UsageError) as info:
        target.install(cluster)
    assert str(info.value).startswith(
        "CRD cnclaims.core.matrixorigin.io was installed by mo-chaos (a model:/source:/binary: "
        "run); the operator's chart must install its own: delete them first "
        "(`kubectl delete crd cnclaims.core.matrixorigin.io cnclaimsets.core.matrixorigin.io "
        "cnpools.core.matrixorigin.io`"
    )
    assert runner.calls == []


def test_installed_target_needs_an_operator_in_the_cluster_local(cluster) -> None:
    from mochaos.kube import new_api_client

    target = InstalledTarget(
        client_factory=lambda c: new_api_client(c.kubeconfig, user_agent="mochaos/test"),
        progress=lambda line: None,
    )
    with pytest.raises(InfraError) as info:
        target.install(cluster)
    assert str(info.value) == (
        "no matrixone-operator Deployment in the cluster: "
        "install it, or use --operator=image:<ref> to install one with Helm"
    )
