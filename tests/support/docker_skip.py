"""The Docker engine for tests that need one, or a skip saying why there is none."""

from __future__ import annotations

import pytest

from mochaos.errors import UsageError
from mochaos.tooling.docker_cli import DockerCli


def docker_or_skip(without: str = "") -> DockerCli:
    """The docker CLI bound to an engine that answers (``DockerCli.server_version``); the
    test is skipped otherwise, with the CLI's one line and ``without`` (what is checked
    instead)."""
    try:
        docker = DockerCli.find()
        docker.server_version()
    except UsageError as err:
        pytest.skip(f"{err}{'; ' + without if without else ''}")
    return docker
