"""Which images mo-chaos builds itself, and whether it tries a registry first."""

from __future__ import annotations

from mochaos.images import catalog


def test_openkruises_manager_is_pulled_first_then_built_from_its_module() -> None:
    found = catalog.builder_for("openkruise/kruise-manager:v1.4.0")
    assert found is not None and found.pull_first is True
    assert "v1.4.0" in found.what
    assert catalog.builder_for("docker.io/openkruise/kruise-manager:v1.5.1") is not None


def test_a_registered_image_is_always_built_and_an_unknown_one_has_no_builder() -> None:
    builder = catalog.Builder(lambda docker, progress: None, pull_first=False, what="ours")
    catalog.register("mochaos.local/matrixone-operator:abc", builder)
    assert catalog.builder_for("mochaos.local/matrixone-operator:abc") is builder
    assert catalog.builder_for("example.com/other:1") is None


def test_matrixone_by_its_semantic_tag_is_built_by_its_own_recipe() -> None:
    found = catalog.builder_for("matrixorigin/matrixone:1.2.3")
    assert found is not None and found.pull_first is False  # ensure_image pulls first itself
    assert "1.2.3" in found.what
    assert catalog.builder_for("matrixorigin/matrixone:nightly-abc") is None
