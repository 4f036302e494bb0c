"""A new local cluster takes no port that another cluster records, whatever its state folder
and whether or not that cluster listens on it now (its apiserver stopped by an outage, a
scheduler restarting, the whole cluster stopped): kwokctl alone looks only at its own work
folder, and handed such a port out again."""

from __future__ import annotations

import socket

import pytest
import yaml

from mochaos.binaries import control_plane
from mochaos.cluster.local import ports
from mochaos.cluster.local.local_provider import LocalProvider
from mochaos.procs import port_in_use

from support.polling import wait_until

needs_binaries = pytest.mark.skipif(
    not control_plane.all_built(), reason="local binaries not built"
)


def kwok_config(cluster_dir, **options) -> None:
    """A cluster's ``kwok.yaml`` as kwokctl writes it (a configuration list; ports in the
    KwokctlConfiguration's options)."""
    cluster_dir.mkdir(parents=True)
    docs = [
        {"apiVersion": "config.kwok.x-k8s.io/v1alpha1", "kind": "KwokctlConfiguration",
         "options": {"runtime": "binary", **options}},
        {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage", "metadata": {"name": "x"}},
    ]  # fmt: skip
    (cluster_dir / ports.CONFIG_NAME).write_text(yaml.safe_dump_all(docs))


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """A machine-wide list of its own (the real one lists the machine's real clusters)."""
    path = tmp_path / "registry"
    monkeypatch.setattr(ports, "registry", lambda: path)
    return path


def test_the_ports_a_cluster_records_are_read_from_its_kwokctl_configuration(tmp_path):
    kwok_config(tmp_path / "w" / "clusters" / "a", etcdPort=32766, kubeApiserverPort=32764,
                kwokControllerPort=0, securePort=True, etcdBinary="/bin/etcd")  # fmt: skip
    (tmp_path / "w" / "clusters" / "broken").mkdir()
    (tmp_path / "w" / "clusters" / "broken" / ports.CONFIG_NAME).write_text("{[")
    assert ports.recorded([tmp_path / "w"]) == {32766, 32764}


def test_chosen_ports_skip_the_recorded_the_given_and_the_bound(registry):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        bound = held.getsockname()[1]
        free = [p for p in range(ports.SCAN_FROM, ports.SCAN_FROM - 40, -1)
                if not port_in_use(p)]  # fmt: skip
        taken = set(free[:3])
        chosen = ports.choose({"kubeApiserverPort": free[3]}, taken)
    assert set(chosen) == set(ports.PORT_OPTIONS) - {"kubeApiserverPort"}
    assert not set(chosen.values()) & (taken | {free[3], bound})
    assert len(set(chosen.values())) == len(chosen)
    assert list(chosen.values()) == sorted(chosen.values(), reverse=True), "scans down"


def test_a_cluster_of_another_state_folder_keeps_its_ports_while_they_are_free(tmp_path, registry):
    other, mine = tmp_path / "other-state" / "kwok", tmp_path / "my-state" / "kwok"
    free = [p for p in range(ports.SCAN_FROM, ports.SCAN_FROM - 40, -1) if not port_in_use(p)]
    recorded = dict(zip(ports.PORT_OPTIONS, free, strict=False))
    kwok_config(other / "clusters" / "stopped", **recorded)
    ports.register(other)
    chosen = ports.for_new_cluster(mine, {})
    assert not set(chosen.values()) & set(recorded.values()), (chosen, recorded)
    assert ports.registered() == [other.resolve(), mine.resolve()]


def test_the_list_drops_folders_that_hold_no_cluster_any_more(tmp_path, registry):
    gone, kept = tmp_path / "gone" / "kwok", tmp_path / "kept" / "kwok"
    kwok_config(kept / "clusters" / "a", etcdPort=32700)
    registry.write_text(f"{gone}\n{kept}\n")
    ports.register(tmp_path / "new" / "kwok")
    assert ports.registered() == [kept.resolve(), (tmp_path / "new" / "kwok").resolve()]


@needs_binaries
def test_a_cluster_created_during_another_clusters_outage_leaves_it_its_ports(
    tmp_path, monkeypatch
):
    """The CI failure's shape: a private cluster created while another state folder's
    cluster had a component down took that component's port."""
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "a"))
    first = LocalProvider(name="mc-ports-a", nodes=1)
    first.up()
    try:
        saved = first.stop_component("kube-apiserver")
        monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "b"))
        second = LocalProvider(name="mc-ports-b", nodes=1)
        try:
            second.up()
            theirs = ports.ports_of(first.cluster_dir / ports.CONFIG_NAME)
            mine = ports.ports_of(second.cluster_dir / ports.CONFIG_NAME)
            assert len(theirs) == len(mine) == len(ports.PORT_OPTIONS), (theirs, mine)
            assert not theirs & mine, f"the new cluster took {sorted(theirs & mine)}"
            first.start_component(saved)
            # Its scheduler and controller-manager may have lost their leases meanwhile and
            # exited: its supervisor restarts them (on their own ports, still free).
            wait_until(first.is_healthy, timeout=60, what="the first cluster healthy again")
            assert second.is_healthy(), second.status()
        finally:
            second.down()
    finally:
        monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "a"))
        first.down()
