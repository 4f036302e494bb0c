"""The TCP ports of local clusters, chosen machine-wide by mo-chaos rather than by kwokctl.

kwokctl gives each component of a new cluster the highest port below 32768 that is free at
that moment and not recorded by another cluster *of its own work folder*
(sigs.k8s.io/kwok@v0.8.0 pkg/utils/net/unused_port.go, pkg/kwokctl/runtime/list.go
``GetUsedPorts``). A cluster of another state folder (``MOCHAOS_STATE``: the safety tests'
private clusters, a second user) is invisible to it, so a port of such a cluster that is
free for a moment — its apiserver stopped by a dependency outage, a scheduler restarting
after it lost its lease, the whole cluster stopped — is handed to the new cluster, and one
of the two then never binds it (a create that times out, or a component that cannot come
back). So mo-chaos registers every kwok work folder it uses in a machine-wide list, and a
creation (under the machine-wide creation lock) takes ports that no cluster of any listed
folder records and that nothing listens on now, scanning down as kwokctl does. The
apiserver's port alone may be fixed instead (``MOCHAOS_APISERVER_PORT``: :func:`port_from_env`),
and must then be free (:func:`check_port_free`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from mochaos.errors import InfraError, UsageError
from mochaos.paths import machine_file
from mochaos.procs import port_in_use

PORT_OPTIONS = (
    "etcdPeerPort",
    "etcdPort",
    "kubeApiserverPort",
    "kwokControllerPort",
    "kubeControllerManagerPort",
    "kubeSchedulerPort",
)
"""The kwokctl options of the ports its binary runtime gives a cluster's components
(pkg/kwokctl/runtime/binary/cluster_setup.go and the kube-* component files)."""
SCAN_FROM = 32767
"""The first port tried; Linux hands out ephemeral ports from 32768 up, so none below
collides with a client's connection."""
SCAN_DOWN_TO = 10000
REGISTRY = "kwok-workdirs"
"""The machine-wide list of kwok work folders (:func:`mochaos.paths.machine_file`)."""
CONFIG_NAME = "kwok.yaml"
"""What kwokctl records in each cluster's folder, the ports included."""


def registry() -> Path:
    """The file listing every kwok work folder mo-chaos has created a cluster in."""
    return machine_file(REGISTRY)


def register(workdir: Path) -> None:
    """Add ``workdir`` to the machine-wide list (call under the creation lock); folders
    that no longer hold clusters are dropped from it on the way."""
    kept = [w for w in registered() if (w / "clusters").is_dir() and w != workdir.resolve()]
    path = registry()
    path.write_text("".join(f"{w}\n" for w in [*kept, workdir.resolve()]))
    # Another user's mo-chaos adds its folders too; a file that user created is theirs.
    with contextlib.suppress(PermissionError):
        path.chmod(0o666)


def registered() -> list[Path]:
    """The work folders listed, in the order they were added."""
    try:
        lines = registry().read_text().splitlines()
    except FileNotFoundError:
        return []
    return [Path(line) for line in lines if line.strip()]


def recorded(workdirs: Iterable[Path]) -> set[int]:
    """The ports the clusters of ``workdirs`` record (running or not)."""
    out: set[int] = set()
    for workdir in workdirs:
        for config in sorted((workdir / "clusters").glob(f"*/{CONFIG_NAME}")):
            out |= ports_of(config)
    return out


def ports_of(config: Path) -> set[int]:
    """The ports one cluster's kwokctl configuration records (an unreadable one: none)."""
    try:
        docs = list(yaml.safe_load_all(config.read_text()))
    except (OSError, yaml.YAMLError):
        return set()
    out: set[int] = set()
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "KwokctlConfiguration":
            out |= port_values(doc.get("options") or {})
    return out


def port_values(options: Mapping[str, Any]) -> set[int]:
    """The ports a set of kwokctl options gives (``securePort`` is a switch, and a bool is
    an int to Python)."""
    return {v for k, v in options.items() if k.endswith("Port") and type(v) is int and v > 0}


def choose(options: Mapping[str, Any], taken: set[int]) -> dict[str, int]:
    """A port for each of :data:`PORT_OPTIONS` that ``options`` leaves unset: the highest
    ones not in ``taken``, not given in ``options`` and not bound now (kwokctl's own test
    binds 127.0.0.1 and all addresses)."""
    avoid = taken | port_values(options)
    out: dict[str, int] = {}
    port = SCAN_FROM + 1
    for name in PORT_OPTIONS:
        if options.get(name):
            continue
        port -= 1
        while port in avoid or port_in_use(port):
            port -= 1
            if port <= SCAN_DOWN_TO:
                raise InfraError(
                    f"no free port between {SCAN_DOWN_TO} and {SCAN_FROM} for a local cluster",
                    hint="stop clusters you no longer need (python -m mochaos cluster down)",
                )
        out[name] = port
    return out


def for_new_cluster(workdir: Path, options: Mapping[str, Any]) -> dict[str, int]:
    """The ports a cluster about to be created in ``workdir`` takes (call under the
    machine-wide creation lock): none that a cluster of any registered folder records.
    ``workdir`` is registered."""
    register(workdir)
    return choose(options, recorded(registered()))


PORT_ENV = "MOCHAOS_APISERVER_PORT"


def port_from_env() -> int | None:
    """The apiserver port :data:`PORT_ENV` fixes, or None (UsageError when it is no port)."""
    raw = os.environ.get(PORT_ENV, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise UsageError(
            f"{PORT_ENV}={raw!r} is not a TCP port",
            hint=f"set {PORT_ENV} to a free port (1-65535), or unset it for a random one",
        )
    return int(raw)


def check_port_free(port: int) -> None:
    """Raise InfraError naming ``port`` when something already listens on it (127.0.0.1)."""
    if port_in_use(port, hosts=("127.0.0.1",)):
        raise InfraError(
            f"apiserver port {port} on 127.0.0.1 is already in use",
            hint=f"free it (`ss -ltnp 'sport = :{port}'` shows the owner) or set "
            f"{PORT_ENV} to another port, or unset it for a random one",
        )
