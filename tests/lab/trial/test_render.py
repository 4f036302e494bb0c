"""The renderer's input and output, with a stand-in binary (the real one needs a checkout)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos.errors import InfraError

from trial.render import ADMISSION, MAIN, render


def _binary(tmp_path: Path, script: str) -> Path:
    path = tmp_path / "mochaos-render"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return path


def test_the_documents_go_in_as_yaml_and_the_objects_come_out_as_json(tmp_path: Path) -> None:
    binary = _binary(tmp_path, f'cat > {tmp_path}/in.yaml\necho \'[{{"kind": "ConfigMap"}}]\'\n')
    objects = render(
        binary,
        [
            {"kind": "LogSet", "metadata": {"name": "pool"}},
            {"kind": "DNSet", "metadata": {"name": "pool"}},
        ],
    )
    assert objects == [{"kind": "ConfigMap"}]
    text = (tmp_path / "in.yaml").read_text()
    assert "kind: LogSet" in text and "\n---\n" in text and "kind: DNSet" in text


def test_a_refusal_of_the_operators_webhooks_is_one_line(tmp_path: Path) -> None:
    binary = _binary(
        tmp_path,
        'echo "some detail" >&2\n'
        'echo "mochaos-render: webhook refused pool: spec.replicas: Invalid" >&2\n'
        "exit 1\n",
    )
    with pytest.raises(InfraError) as info:
        render(binary, [])
    assert str(info.value) == (
        "the operator's renderer failed: mochaos-render: webhook refused pool: spec.replicas: "
        "Invalid: the operator's webhooks or controllers refused the topology"
    )


def test_the_go_files_copied_into_the_checkout_ship_with_the_package() -> None:
    assert MAIN.read_text().startswith("// Copied by mo-chaos's image trial")
    assert "package webhook" in ADMISSION.read_text()
