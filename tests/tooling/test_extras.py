"""A missing optional package is reported as the extra to install, nothing else."""

from __future__ import annotations

import json

import pytest

from mochaos import exits
from mochaos.errors import InfraError
from mochaos.tooling.extras import import_extra


def test_an_installed_module_is_returned() -> None:
    assert import_extra("json") is json


def test_a_missing_module_names_the_extra_to_install() -> None:
    with pytest.raises(InfraError) as info:
        import_extra("testcontainers.community.not_a_module", why="MinIO runs as a testcontainer")
    assert str(info.value) == (
        "Python module testcontainers.community.not_a_module is not installed "
        "(MinIO runs as a testcontainer): install mo-chaos[kind], e.g. `pip install -e '.[kind]'`"
    )
    assert info.value.exit_code == exits.INFRA
    assert "Docker" not in str(info.value) and "network" not in str(info.value)
