"""OpenKruise's Go module as mo-chaos reads it: the wrapper go.mod, the go steps, the
manifests (kustomize's patch and name prefix applied), and which version a checkout pins."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mochaos.kruise import kruise_build as build
from mochaos.kruise import module
from mochaos.kruise.pin import pinned_version

KRUISE_GOMOD = """module github.com/openkruise/kruise

go 1.18

require (
	github.com/modern-go/reflect2 v1.0.1 // indirect
	k8s.io/api v0.22.6
)

replace (
	k8s.io/api => k8s.io/api v0.22.6
	k8s.io/kubernetes => k8s.io/kubernetes v1.22.6
	example.com/local => ./hack/local
)
"""


def test_the_wrapper_repeats_kruises_replaces_only():
    gomod = module.wrapper_gomod(KRUISE_GOMOD)
    assert gomod.splitlines() == [
        "module mochaos.local/kruisebin",
        "",
        "replace k8s.io/api => k8s.io/api v0.22.6",
        "replace k8s.io/kubernetes => k8s.io/kubernetes v1.22.6",
    ]


def test_the_go_steps_get_the_manager_then_raise_reflect2():
    assert module.go_steps("v1.4.0") == [
        ["get", "-tool", "github.com/openkruise/kruise@v1.4.0"],
        ["get", "github.com/modern-go/reflect2@v1.0.2"],
    ]


def _fake_module(root: Path) -> Path:
    (root / "config" / "crd" / "bases").mkdir(parents=True)
    (root / "config" / "webhook").mkdir(parents=True)
    (root / "config" / "default").mkdir(parents=True)
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "clonesets.apps.kruise.io"}}  # fmt: skip
    (root / "config/crd/bases/apps.kruise.io_clonesets.yaml").write_text(yaml.safe_dump(crd))
    service = {"name": "webhook-service", "path": "/mutate-pod"}
    hook = {"name": "mpod.kb.io", "failurePolicy": "Fail", "sideEffects": "None",
            "clientConfig": {"service": service}}  # fmt: skip
    manifests = [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"creationTimestamp": None, "name": "mutating-webhook-configuration"},
         "webhooks": [hook, {**hook, "name": "mother.kb.io"}]},
        {"apiVersion": "admissionregistration.k8s.io/v1",
         "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": "validating-webhook-configuration"}, "webhooks": []},
    ]  # fmt: skip
    (root / "config/webhook/manifests.yaml").write_text(yaml.safe_dump_all(manifests))
    patch = {"apiVersion": "admissionregistration.k8s.io/v1",
             "kind": "MutatingWebhookConfiguration",
             "metadata": {"name": "mutating-webhook-configuration"},
             "webhooks": [{"name": "mpod.kb.io", "namespaceSelector": {"matchExpressions": [
                 {"key": "control-plane", "operator": "DoesNotExist"}]}}]}  # fmt: skip
    (root / "config/webhook/patch_manifests.yaml").write_text(yaml.safe_dump(patch))
    (root / "config/default/kustomization.yaml").write_text("namePrefix: kruise-\n")
    return root


def test_webhook_configurations_are_rendered_as_kruises_kustomization_does(tmp_path: Path):
    mutating, validating = module.webhook_configurations(_fake_module(tmp_path))
    assert mutating["metadata"] == {"name": "kruise-mutating-webhook-configuration"}
    assert validating["metadata"] == {"name": "kruise-validating-webhook-configuration"}
    pod, other = mutating["webhooks"]
    assert pod["namespaceSelector"]["matchExpressions"][0]["key"] == "control-plane"
    assert pod["failurePolicy"] == "Fail"
    assert pod["clientConfig"]["service"]["path"] == "/mutate-pod"
    assert "namespaceSelector" not in other


def test_manifests_are_written_and_read_back(tmp_path: Path):
    root = _fake_module(tmp_path / "module")
    out = tmp_path / "out"
    out.mkdir()
    module.write_manifests(root, out)
    (crd,) = module.read_manifests(out / module.CRDS_FILE)
    assert crd["metadata"]["name"] == "clonesets.apps.kruise.io"
    assert len(module.read_manifests(out / module.WEBHOOKS_FILE)) == 2


def test_a_module_without_crds_is_refused(tmp_path: Path):
    (tmp_path / "config" / "crd" / "bases").mkdir(parents=True)
    with pytest.raises(ValueError, match="has no CRDs"):
        module.crds(tmp_path)


def test_the_built_manifests_are_the_modules():
    c = build.component()
    if not c.is_built():
        pytest.skip("kruise-manager not built yet (a real target or tests/kruise builds it)")
    crds = module.read_manifests(c.path(module.CRDS_FILE))
    assert len(crds) == 17, "every CRD of config/crd/bases (kruise retries discovery otherwise)"
    assert {"clonesets.apps.kruise.io", "statefulsets.apps.kruise.io"} <= {
        d["metadata"]["name"] for d in crds
    }
    names = [d["metadata"]["name"] for d in module.read_manifests(c.path(module.WEBHOOKS_FILE))]
    assert names == ["kruise-mutating-webhook-configuration",
                     "kruise-validating-webhook-configuration"]  # fmt: skip


@pytest.mark.parametrize(
    ("files", "version"),
    [
        ({"go.mod": "require (\n\tgithub.com/openkruise/kruise-api v1.5.1\n)\n"}, "v1.5.1"),
        ({"go.mod": "require github.com/openkruise/kruise-api v1.3.0\n"}, "v1.3.0"),
        ({"charts/matrixone-operator/Chart.yaml":
          "dependencies:\n- name: kruise\n  version: '1.4.0'\n"}, "v1.4.0"),
        ({"go.mod": "require github.com/openkruise/kruise-api v0.0.0-20230101-abcdef\n"},
         module.DEFAULT_VERSION),
        ({}, module.DEFAULT_VERSION),
    ],
)  # fmt: skip
def test_the_pinned_version_comes_from_the_checkout(tmp_path: Path, files, version):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert pinned_version(tmp_path) == version


def test_without_a_checkout_the_default_is_used():
    assert pinned_version(None) == module.DEFAULT_VERSION == "v1.4.0"
