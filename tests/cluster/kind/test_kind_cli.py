"""The real ``kind`` CLI on a machine whose Docker has no engine behind it.

kind is built from its Go module (``sigs.k8s.io/kind@v0.33.0``) into the
mo-chaos cache on first use; the children get a DOCKER_HOST that cannot
answer, so on every machine kind fails the same way and the provider must
turn that into a one-line InfraError (exit 3), never a test failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mochaos import exits
from mochaos.cluster.kind.host_facts import HostFacts
from mochaos.cluster.kind.kind_provider import KIND, KindProvider
from mochaos.errors import InfraError
from mochaos.tooling.runner import SubprocessRunner
from mochaos.tooling.tools import check_version

NO_ENGINE = {"DOCKER_HOST": "unix:///nonexistent/mochaos/docker.sock"}


class ClaimsToBeUp:
    """An engine stand-in that says yes, so the real kind CLI is what fails."""

    def info(self) -> dict:
        return {"ServerVersion": "28.2.2", "CgroupVersion": "2", "Driver": "overlay2",
                "Architecture": "x86_64"}  # fmt: skip

    def has_image(self, ref: str) -> bool:
        return True

    def pull(self, ref: str, *, progress) -> None:
        raise AssertionError("no pull expected")

    def exec(self, container: str, argv) -> tuple[int, str]:
        return 0, ""


@pytest.fixture(scope="module")
def kind_dir() -> Path:
    """A directory with the real kind CLI (built into the cache by our recipe when missing)."""
    from mochaos.errors import BuildError
    from mochaos.images.go_tools import kind_cli

    try:
        return kind_cli(progress=lambda line: None).parent
    except BuildError as err:
        pytest.skip(f"cannot build kind from the Go module proxy: {err}")


def _provider(kind_dir: Path, tmp_path: Path) -> KindProvider:
    return KindProvider(
        name="mochaos-cli-test",
        runner=SubprocessRunner(progress=None, env=NO_ENGINE, log_path=tmp_path / "cmd.log"),
        engine=ClaimsToBeUp(),
        host=HostFacts(missing_caps=(), cgroup_version="2"),
        state_dir=tmp_path,
        search_path=f"{kind_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    )


def test_real_kind_version_passes_our_minimum(kind_dir: Path) -> None:
    runner = SubprocessRunner(progress=None)
    assert check_version(KIND, str(kind_dir / "kind"), runner=runner) == (0, 33, 0)


def test_real_kind_without_a_docker_engine_is_an_infra_error(
    kind_dir: Path, tmp_path: Path
) -> None:
    provider = _provider(kind_dir, tmp_path)
    with pytest.raises(InfraError) as info:
        provider.ensure_cluster()
    text = str(info.value)
    assert info.value.exit_code == exits.INFRA
    assert "\n" not in text
    assert text.startswith("kind get clusters failed (exit 1): ")
    assert "Cannot connect to the Docker daemon at unix:///nonexistent/mochaos/docker.sock" in text
    assert text.endswith(": check that Docker is running")
    assert "kind get clusters" in (tmp_path / "cmd.log").read_text()


def test_real_kind_load_of_a_missing_image_is_an_infra_error(
    kind_dir: Path, tmp_path: Path
) -> None:
    provider = _provider(kind_dir, tmp_path)
    with pytest.raises(InfraError) as info:
        provider.load_image("mochaos/not-there:v0")
    assert str(info.value).startswith(
        "kind load docker-image mochaos/not-there:v0 (classic (overlay2) image store) failed "
        "(exit 1): "
    )
