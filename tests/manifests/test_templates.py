"""Every template under manifests/: renders completely, parses, is labelled, is documented."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest
import yaml

from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.errors import UsageError
from mochaos.images.node_image import STORAGE_MANIFEST
from mochaos.tooling.apply import MANIFESTS, render_manifest

NODE_IMAGE = [STORAGE_MANIFEST]
"""Rendered once into the kind node image, not per run: no run label."""
TEMPLATES = sorted(p for p in MANIFESTS.rglob("*.yaml")
                   if "${" in p.read_text() and p not in NODE_IMAGE)  # fmt: skip
PLAIN = sorted(p for p in MANIFESTS.rglob("*.yaml") if "${" not in p.read_text())


def placeholders(path: Path) -> set[str]:
    """The ``${name}`` placeholders of a template."""
    found = string.Template(path.read_text()).get_identifiers()
    return set(found)


def sample_values(path: Path) -> dict[str, object]:
    """A value for every placeholder; numbers where the template expects a number."""
    numeric = {"log_replicas", "max_idle", "max_pods", "replicas"}
    return {name: 3 if name in numeric else f"v-{name}" for name in placeholders(path)}


def test_the_templates_are_the_ones_the_code_uses() -> None:
    names = {str(p.relative_to(MANIFESTS)) for p in TEMPLATES}
    assert names == {
        "matrixone/logset.yaml",
        "matrixone/dnset.yaml",
        "matrixone/cnpool.yaml",
        "matrixone/cnclaimset.yaml",
        "minio/in-cluster.yaml",
    }
    assert [str(p.relative_to(MANIFESTS)) for p in PLAIN] == ["kind/audit-policy.yaml"]


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_template_renders_to_labelled_objects(path: Path) -> None:
    values = sample_values(path)
    docs = render_manifest(path, values)
    assert docs
    text = yaml.safe_dump_all(docs)
    assert "${" not in text
    for doc in docs:
        assert {"apiVersion", "kind", "metadata"} <= set(doc)
        assert doc["metadata"]["labels"][RUN_ID_LABEL] == values["run_id"]


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_template_needs_every_placeholder(path: Path) -> None:
    values = sample_values(path)
    missing = sorted(values)[0]
    del values[missing]
    with pytest.raises(UsageError, match=re.escape(f"needs a value for ${{{missing}}}")):
        render_manifest(path, values)


@pytest.mark.parametrize("path", [*TEMPLATES, *NODE_IMAGE], ids=lambda p: p.name)
def test_placeholders_stay_out_of_comments(path: Path) -> None:
    comments = [ln for ln in path.read_text().splitlines() if ln.lstrip().startswith("#")]
    assert not [c for c in comments if "${" in c]


def test_readme_names_every_manifest() -> None:
    readme = (MANIFESTS / "README.md").read_text()
    for path in [*TEMPLATES, *PLAIN, *NODE_IMAGE]:
        assert f"`{path.relative_to(MANIFESTS)}`" in readme
