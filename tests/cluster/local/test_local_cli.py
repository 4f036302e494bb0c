"""The local cluster commands pick the cluster $MOCHAOS_CLUSTER_NAME names unless --name does."""

from __future__ import annotations

import pytest

from mochaos import cli


@pytest.mark.parametrize(
    ("env", "args", "cluster"),
    [(None, [], "mochaos"), ("mine", [], "mine"), ("mine", ["--name", "other"], "other")],
)
def test_cluster_name_from_environment_or_option(
    env: str | None,
    args: list[str],
    cluster: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path,
) -> None:
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path))
    if env is None:
        monkeypatch.delenv("MOCHAOS_CLUSTER_NAME", raising=False)
    else:
        monkeypatch.setenv("MOCHAOS_CLUSTER_NAME", env)
    assert cli.main(["cluster", "kubeconfig", *args]) == 0
    assert capsys.readouterr().out.strip() == str(
        tmp_path / "kwok" / "clusters" / cluster / "kubeconfig.yaml"
    )
