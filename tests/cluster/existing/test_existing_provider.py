"""The existing provider: allow-listed contexts only, refused before any connection."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from mochaos import exits
from mochaos.cluster.existing.existing_provider import ExistingProvider
from mochaos.ctrl.objects import RUN_ID_LABEL
from mochaos.errors import UsageError


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback TCP socket standing in for an apiserver; it counts connection attempts."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    yield sock
    sock.close()


def connections(sock: socket.socket) -> int:
    """Accept (and close) every pending connection; how many there were."""
    count = 0
    while True:
        try:
            conn, _ = sock.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


def write_kubeconfig(path: Path, server: str, *, current: str = "shared-prod") -> Path:
    contexts = ["shared-prod", "dev-sandbox"]
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": current,
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
                "contexts": [
                    {"name": n, "context": {"cluster": "c", "user": "u"}} for n in contexts
                ],
            }
        )
    )
    return path


def never_connect(kubeconfig: Path, context: str):
    raise AssertionError("no API client may be built for a refused context")


def test_a_context_not_allow_listed_is_refused_before_any_connection(
    tmp_path: Path, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    kubeconfig = write_kubeconfig(tmp_path / "config", f"https://127.0.0.1:{port}")
    with pytest.raises(UsageError) as info:
        ExistingProvider(kubeconfig=kubeconfig, context=None, allow_contexts=["dev-sandbox"])
    assert str(info.value) == (
        "context 'shared-prod' is not allow-listed (allowed: dev-sandbox): "
        "pass --mochaos-allow-context=shared-prod if chaos may run on that cluster"
    )
    assert info.value.exit_code == exits.USAGE
    assert connections(listener) == 0


def test_an_allow_listed_context_does_reach_the_server(
    tmp_path: Path, listener: socket.socket
) -> None:
    # The control for the test above: the same setup, allowed, does connect.
    port = listener.getsockname()[1]
    kubeconfig = write_kubeconfig(tmp_path / "config", f"https://127.0.0.1:{port}")
    provider = ExistingProvider(
        kubeconfig=kubeconfig, context="shared-prod", allow_contexts=["shared-prod"]
    )
    assert connections(listener) == 0
    hang_ups = threading.Event()
    counted: list[int] = []

    def hang_up_on_everyone() -> None:
        while not hang_ups.is_set():
            counted.append(connections(listener))
            hang_ups.wait(0.01)

    thread = threading.Thread(target=hang_up_on_everyone, daemon=True)
    thread.start()
    try:
        with pytest.raises(Exception):  # noqa: B017 - the fake server hangs up: any client error
            provider.up()
    finally:
        hang_ups.set()
        thread.join()
    assert sum(counted) >= 1


def test_an_empty_allow_list_refuses_everything(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "config", "https://10.255.255.1:6443")
    with pytest.raises(UsageError, match=r"\(allowed: none\)"):
        ExistingProvider(kubeconfig=kubeconfig, context="dev-sandbox", allow_contexts=[])


def test_a_named_context_wins_over_the_current_one(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "config", "https://10.255.255.1:6443")
    provider = ExistingProvider(
        kubeconfig=kubeconfig,
        context="dev-sandbox",
        allow_contexts=["dev-sandbox"],
        client_factory=never_connect,
    )
    assert provider.context == "dev-sandbox"
    assert provider.audit_log() is None


def test_an_allow_listed_context_missing_from_the_file_is_refused(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "config", "https://10.255.255.1:6443")
    with pytest.raises(UsageError, match="context 'ghost' is not in kubeconfig"):
        ExistingProvider(kubeconfig=kubeconfig, context="ghost", allow_contexts=["ghost"])


def test_an_unreadable_kubeconfig_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^cannot read kubeconfig .*: pass --mochaos-kubeconfig"):
        ExistingProvider(kubeconfig=tmp_path / "missing", context="x", allow_contexts=["x"])
    bad = tmp_path / "bad"
    bad.write_text("contexts: [unclosed")
    with pytest.raises(UsageError, match="is not valid YAML"):
        ExistingProvider(kubeconfig=bad, context="x", allow_contexts=["x"])


def test_no_current_context_needs_an_explicit_one(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "config", "https://10.255.255.1:6443", current="")
    with pytest.raises(UsageError, match="names no current context: pass --mochaos-context"):
        ExistingProvider(kubeconfig=kubeconfig, context=None, allow_contexts=["dev-sandbox"])


def test_it_refuses_to_delete_a_namespace_it_did_not_create(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "config", "https://10.255.255.1:6443")
    provider = ExistingProvider(
        kubeconfig=kubeconfig,
        context="dev-sandbox",
        allow_contexts=["dev-sandbox"],
        client_factory=never_connect,
    )
    with pytest.raises(UsageError, match="namespace 'kube-system' was not created by this run"):
        provider.delete_namespace("kube-system")
    provider.down()  # nothing created: nothing to delete, no API call


def _context_of(kubeconfig: Path) -> str:
    return yaml.safe_load(kubeconfig.read_text())["current-context"]


def test_existing_provider_on_the_local_cluster_local(cluster) -> None:
    context = _context_of(cluster.kubeconfig)
    provider = ExistingProvider(
        kubeconfig=cluster.kubeconfig, context=context, allow_contexts=[context]
    )
    seen = provider.up()
    assert seen.provider == "existing"
    assert seen.context == context
    assert seen.version.startswith("v1.")

    from kubernetes import client, config

    name = "mochaos-existing-probe"
    provider.create_namespace(name, run_id="probe")
    api = config.new_client_from_config(config_file=str(cluster.kubeconfig), context=context)
    try:
        ns = client.CoreV1Api(api).read_namespace(name)
        assert ns.metadata.labels[RUN_ID_LABEL] == "probe"
        provider.down()
        after = client.CoreV1Api(api).read_namespace(name)
        assert after.metadata.deletion_timestamp is not None or after.status.phase == "Terminating"
    finally:
        api.close()
