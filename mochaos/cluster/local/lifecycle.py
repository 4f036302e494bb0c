"""The local cluster's life: started or reused, recovered, created, deleted.

``up`` reuses a healthy cluster, gives an existing one its supervisor back (which restarts
whatever exited meanwhile), recreates one that does not recover, and creates a missing one
under the machine-wide creation lock (:meth:`Lifecycle.creation_lock`: a new cluster's
ports are chosen under it). ``down`` stops the supervisor, the doubles, what is attached
(:mod:`mochaos.cluster.local.attached`) and every component by pid, and removes the
cluster's files. Relies on :class:`~mochaos.cluster.local.components.Components` and
:class:`~mochaos.cluster.local.provisions.Provisions` for the processes and the doubles.
"""

from __future__ import annotations

import shutil
import time

from filelock import FileLock

from mochaos.binaries import control_plane
from mochaos.binaries.kwok_stages import storage_class
from mochaos.cluster.local import attached, doubles_host, in_use
from mochaos.cluster.local.cluster_dir import COMPONENTS, LOCK_TIMEOUT, READY_TIMEOUT
from mochaos.cluster.local.components import stop_pid
from mochaos.cluster.local.kwokctl import Kwokctl, default_stages, stages_digest
from mochaos.cluster.local.ports import check_port_free
from mochaos.errors import InfraError
from mochaos.kube import Cluster
from mochaos.paths import machine_lock
from mochaos.progress import announce

NODE_PREFIX = "kwok-node"
CREATE_TIMEOUT = 180.0
RECOVER_TIMEOUT = 45.0
"""Seconds ``up()`` gives an existing cluster's supervisor to bring back what exited (a
restarted scheduler waits up to 15 s for its predecessor's lease) before recreating it."""
CREATE_LOCK = "kwokctl-create"
"""The machine-wide lock cluster creations take (:meth:`LocalProvider.creation_lock`)."""
STAGES_DIGEST = "stages.digest"
"""In the cluster's folder: a digest of the kwok Stages it was created with."""


class Lifecycle(Kwokctl):
    """Start, reuse, recover, create and remove one named local cluster."""

    def up(self) -> Cluster:
        """Start the cluster or reuse an existing one; build binaries on first use.

        An existing cluster gets its supervisor back if it died, which restarts whatever
        exited meanwhile; a double that does not run, or runs another command than this
        mo-chaos would start, is started afresh once the control plane answers; only a
        cluster that does not recover is recreated. This process then counts as using the
        cluster until it exits (:mod:`mochaos.cluster.local.in_use`).
        """
        # The API client's modules (imported lazily, on first attribute use) take seconds of
        # CPU: load them before the lock, so that xdist workers reusing a healthy cluster
        # hold it only to check it.
        from kubernetes.client import CoreV1Api  # noqa: F401

        with self._lock():
            if not control_plane.all_built():
                control_plane.build()
            if self.cluster_dir.exists():
                problem = self._recover()
                if problem is None:
                    in_use.share(self.cluster_dir)
                    return self._cluster()
                announce(f"cluster {self.cluster_name} did not recover ({problem}); recreating it")
                self._delete()
            t0 = time.monotonic()
            self._create()
            self._wait_ready(READY_TIMEOUT)
            self._supervise_components()
            self._start_doubles()
            announce(f"cluster {self.cluster_name} ready in {time.monotonic() - t0:.1f}s")
            in_use.share(self.cluster_dir)
            return self._cluster()

    def current(self) -> Cluster | None:
        """The cluster as it runs now (nothing started, nothing held), or None when its
        control plane does not run."""
        if not self.kubeconfig_path().is_file() or self._control_plane_problems():
            return None
        return self._cluster()

    def _recover(self) -> str | None:
        """Bring an existing cluster back under supervision; None when it is healthy again,
        else what is still wrong."""
        if not self.kubeconfig_path().exists():
            return "no kubeconfig"
        changed = self._stages_changed()
        if changed:
            return changed
        if not self.supervision.table():
            # A cluster started before supervision existed: supervise it as it runs.
            missing = set(COMPONENTS) - set(self.running_pids())
            if missing:
                return f"not running: {', '.join(sorted(missing))}"
            self._supervise_components()
        self._refresh_doubles()
        pid, started = self.supervision.ensure_running()
        if started:
            announce(
                f"cluster {self.cluster_name}: supervisor was not running; started (pid {pid})"
            )
        problems = self._wait_for(self._control_plane_problems, RECOVER_TIMEOUT)
        if problems:
            return "; ".join(problems)
        self._start_doubles(only_missing=True)
        return None

    def _stages_changed(self) -> str | None:
        """Why the cluster's kwok Stages are not this mo-chaos's (None when they are): a
        cluster created by an older mo-chaos lacks the kubelet stand-ins or has others."""
        try:
            have = (self.cluster_dir / STAGES_DIGEST).read_text().strip()
        except OSError:
            have = ""
        return None if have == stages_digest() else "its kwok Stages are not this mo-chaos's"

    def down(self) -> None:
        """Stop the supervisor, the doubles and every process of the cluster (by pid), and
        remove its data and kwokctl files."""
        with self._lock():
            self._delete()
            for suffix in ("kwokctl.yaml", "kwokctl.log"):
                (self.workdir / f"{self.cluster_name}.{suffix}").unlink(missing_ok=True)

    def load_image(self, ref: str) -> None:
        """kwok nodes run no containers: there is nothing to load."""
        announce(f"local cluster: image {ref} not needed (kwok nodes run no containers)")

    def _create(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.creation_lock():
            self._create_alone()

    def creation_lock(self) -> FileLock:
        """Held while a cluster is created, machine-wide, across state folders
        (``MOCHAOS_STATE``) too: a new cluster's ports are chosen under it, none that another
        cluster records (:mod:`mochaos.cluster.local.ports`)."""
        return FileLock(str(machine_lock(CREATE_LOCK)), timeout=LOCK_TIMEOUT, mode=0o666)

    def _create_alone(self) -> None:
        if self.apiserver_port is not None:
            check_port_free(self.apiserver_port)
        announce(
            f"starting local cluster {self.cluster_name} (etcd, kube-apiserver, "
            f"controller-manager, scheduler, kwok) on 127.0.0.1"
        )
        config = self._config_file()
        self._kwokctl(
            "create",
            "cluster",
            "--name",
            self.cluster_name,
            "--kubeconfig",
            "",
            "--wait",
            f"{int(CREATE_TIMEOUT)}s",
            "--timeout",
            f"{int(CREATE_TIMEOUT)}s",
            timeout=CREATE_TIMEOUT + 30,
            config=config,
        )
        (self.cluster_dir / STAGES_DIGEST).write_text(stages_digest() + "\n")
        self._kwokctl(
            "scale",
            "node",
            NODE_PREFIX,
            "--replicas",
            str(self.nodes),
            "--name",
            self.cluster_name,
            timeout=60,
        )
        self._apply_storage_class()

    def _apply_storage_class(self) -> None:
        """kwok's ``kwok-volume`` StorageClass, the default class: PVCs without a class get
        it on creation, and kwok's volume Stages provision and bind them."""
        from kubernetes import client, config

        body = storage_class(default_stages())
        api = config.new_client_from_config(config_file=str(self.kubeconfig_path()))
        try:
            client.StorageV1Api(api).patch_storage_class(
                body["metadata"]["name"], body, field_manager="mochaos", force=True,
                _content_type="application/apply-patch+yaml", _request_timeout=10,
            )  # fmt: skip
        finally:
            api.close()

    def _delete(self) -> None:
        # The supervisor first: it would restart what is being stopped.
        self.supervision.stop()
        attached.stop_all(self.cluster_dir)
        doubles_host.stop_all(
            self.supervision, [s.name for s in self.supervision.table() if s.name not in COMPONENTS]
        )
        before = self.pids()
        if self.cluster_dir.exists() and control_plane.binary_paths()["kwokctl"].exists():
            try:
                self._kwokctl("delete", "cluster", "--name", self.cluster_name, timeout=60)
            except InfraError as err:
                announce(f"kwokctl delete failed ({err}); stopping processes by pid")
        for component, pid in before.items():
            stop_pid(pid, component)
        if self.cluster_dir.exists():
            shutil.rmtree(self.cluster_dir, ignore_errors=True)
