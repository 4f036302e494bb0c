"""A kind cluster shared by xdist workers is removed by the controller once they have all
ended (no worker may: the others still use it), unless kept; other providers are left."""

from __future__ import annotations

from dataclasses import replace

from mochaos.config import RunConfig
from mochaos.errors import InfraError
from mochaos.fixtures import remove_kind_after_workers


class Provider:
    def __init__(self, fail: bool = False) -> None:
        self.downs = 0
        self.fail = fail

    def down(self) -> None:
        self.downs += 1
        if self.fail:
            raise InfraError("kind delete cluster mochaos failed: exit 1")


def _cfg(cluster: str) -> RunConfig:
    return replace(RunConfig(run_id="r"), cluster=cluster)


def test_the_controller_removes_the_kind_cluster_its_workers_shared():
    provider = Provider()
    remove_kind_after_workers(_cfg("kind"), provider)  # type: ignore[arg-type]
    assert provider.downs == 1


def test_local_and_existing_clusters_are_left_as_they_are():
    for cluster in ("local", "existing"):
        provider = Provider()
        remove_kind_after_workers(_cfg(cluster), provider)  # type: ignore[arg-type]
        assert provider.downs == 0


def test_a_removal_that_fails_is_said_not_raised(caplog):
    remove_kind_after_workers(_cfg("kind"), Provider(fail=True))  # type: ignore[arg-type]
    assert "was not removed: kind delete cluster mochaos failed" in caplog.text
