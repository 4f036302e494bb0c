"""Manifest rendering: values filled in, a missing one named."""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos import exits
from mochaos.errors import UsageError
from mochaos.tooling.apply import render_manifest


def test_render_manifest_fills_values_and_names_a_missing_one(tmp_path: Path) -> None:
    template = tmp_path / "t.yaml"
    template.write_text('a: "${x}"\ncost: "$$5"\n---\nb: ${n}\n')
    assert render_manifest(template, {"x": "one", "n": 2}) == [{"a": "one", "cost": "$5"}, {"b": 2}]
    with pytest.raises(UsageError) as info:
        render_manifest(template, {"x": "one"})
    assert str(info.value) == "manifest t.yaml needs a value for ${n}: pass it to the renderer"
    assert info.value.exit_code == exits.USAGE
