"""Test namespaces made ready ahead: while one test runs, the next one's namespace gets its
MatrixOne control plane (LogSet and DNSet Ready) and its manager, in the background.

A real manager's namespace takes ~40 s to prepare (the operator counts a store only after
its ``minReadySeconds``, twice); a pytest process (each xdist worker its own) keeps up to
``size`` of them ready or in preparation, one preparation at a time and none while the
machine's available memory is below :data:`MEMORY_FLOOR`. A namespace is created
labelled with the run id and registered with the run state like any other, so the reaper
finds it after a crash; at the end of the session what was not handed out is deleted
(the manager still running, so it finalizes its own objects) and its manager stopped.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mochaos import namespaces, runstate
from mochaos.errors import MochaosError
from mochaos.kube import Cluster, new_api_client
from mochaos.operator.target import RunningOperator
from mochaos.progress import LOGGER, announce, detached

MEMORY_FLOOR = 1 << 30
"""No namespace is prepared ahead while the machine has less memory available (bytes): a
manager with its namespace's MatrixOne double takes ~100 MiB, the tests come first."""
CLOSE_TIMEOUT = 120.0
"""Seconds :meth:`WarmNamespaces.close` waits for a preparation under way to give up: it
stops at its next poll, unless it is still starting the manager (ready in seconds)."""


@dataclass
class Warm:
    """One namespace made ready ahead (or being made ready)."""

    namespace: str
    folder: Path
    """Where its manager's log and working files go."""
    cancel: threading.Event
    """Set when the namespace is no longer wanted: the preparation gives up."""
    ready: threading.Event = field(default_factory=threading.Event)
    running: RunningOperator | None = None
    """Set as soon as the manager started (before the namespace is ready)."""
    error: str | None = None
    took: float = 0.0

    def started(self, running: RunningOperator) -> None:
        """The preparation started the namespace's manager."""
        self.running = running


Prepare = Callable[[Warm], RunningOperator]
"""Starts the manager of ``warm.namespace`` (its files in ``warm.folder``), tells
``warm.started`` at once, brings the namespace's MatrixOne up (giving up once
``warm.cancel`` is set) and returns the manager."""


def memory_available() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where unknown)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def describe(err: BaseException) -> str:
    """An error in one line: a mo-chaos error as it says itself, others with their type."""
    return str(err) if isinstance(err, MochaosError) else f"{type(err).__name__}: {err}"


def warm_name() -> str:
    """A namespace name for a test not known yet: ``mc-[<worker>-]warm-<random>``."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return f"mc-{worker + '-' if worker else ''}warm-{secrets.token_hex(3)}"


class WarmNamespaces:
    """Keeps up to ``size`` namespaces ready for the next tests (see the module docstring)."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        run_id: str,
        size: int,
        prepare: Prepare,
        memory: Callable[[], int | None] = memory_available,
    ) -> None:
        self._cluster = cluster
        self._run_id = run_id
        self._size = size
        self._prepare = prepare
        self._memory = memory
        self._lock = threading.Condition()
        self._queue: list[Warm] = []
        """Ready or in preparation, oldest first; not handed out yet."""
        self._handed: dict[str, Warm] = {}
        """Handed out by :meth:`take`, their manager not yet claimed by :meth:`running`."""
        self._folders: list[Path] = []
        self._stopping = False
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="warm-namespaces", daemon=True)
        self._thread.start()

    def take(self) -> str | None:
        """The oldest namespace made ready ahead (waiting for its preparation to end), or
        None when there is none or it failed; a replacement is prepared at once."""
        with self._lock:
            if not self._queue:
                return None
            warm = self._queue.pop(0)
            self._lock.notify_all()
        warm.ready.wait()
        if warm.error is not None:
            LOGGER.info("namespace %s was not made ready ahead: %s", warm.namespace, warm.error)
            self._discard(warm)
            return None
        with self._lock:
            self._handed[warm.namespace] = warm
        LOGGER.info("namespace %s was made ready ahead (in %.0f s)", warm.namespace, warm.took)
        return warm.namespace

    def running(self, namespace: str) -> RunningOperator | None:
        """The manager started for a namespace :meth:`take` handed out (once)."""
        with self._lock:
            warm = self._handed.pop(namespace, None)
        return warm.running if warm else None

    def close(self) -> None:
        """Stop preparing (a preparation under way gives up), then delete what was not
        handed out and stop its managers."""
        with self._lock:
            self._stopping = True
            self._cancel.set()
            self._lock.notify_all()
        self._thread.join(timeout=CLOSE_TIMEOUT)
        with self._lock:
            left = self._queue + list(self._handed.values())
            self._queue, self._handed = [], {}
        for warm in left:
            self._discard(warm)
        for folder in self._folders:
            shutil.rmtree(folder, ignore_errors=True)

    # -- the background thread -----------------------------------------------------------

    def _run(self) -> None:
        with detached():
            while True:
                with self._lock:
                    while not self._stopping and not self._wanted():
                        self._lock.wait(1.0)
                    if self._stopping:
                        return
                    folder = Path(tempfile.mkdtemp(prefix="mochaos-warm-"))
                    self._folders.append(folder)
                    warm = Warm(warm_name(), folder, self._cancel)
                    self._queue.append(warm)
                self._make_ready(warm)

    def _wanted(self) -> bool:
        """Fewer than ``size`` in the queue, and memory to spare."""
        if len(self._queue) >= self._size:
            return False
        available = self._memory()
        return available is None or available >= MEMORY_FLOOR

    def _make_ready(self, warm: Warm) -> None:
        t0 = time.monotonic()
        try:
            self._create(warm.namespace)
            warm.running = self._prepare(warm)
            took = time.monotonic() - t0
            LOGGER.info("namespace %s ready ahead in %.0f s", warm.namespace, took)
        except Exception as err:  # reported when the namespace is taken, which then falls back
            warm.error = describe(err)
        warm.took = time.monotonic() - t0
        warm.ready.set()

    def _create(self, name: str) -> None:
        cluster = self._cluster
        api = new_api_client(cluster.kubeconfig, user_agent="mochaos/test", context=cluster.context)
        try:
            namespaces.create(api, name, run_id=self._run_id)
        finally:
            api.close()
        runstate.register_namespace(name, cluster.kubeconfig, cluster.context)

    def _discard(self, warm: Warm) -> None:
        """As a test's teardown: ask for the namespace's deletion while its manager runs
        (it finalizes its own objects), stop the manager, release what is left."""
        cluster, name, running = self._cluster, warm.namespace, warm.running
        api = new_api_client(cluster.kubeconfig, user_agent="mochaos/test", context=cluster.context)
        try:
            if running is None:
                namespaces.teardown(api, name)
            else:
                namespaces.teardown(api, name, stop=running.stop, wait=running.waits.teardown)
            runstate.unregister_namespace(name)
        except Exception as err:  # the reaper of a later session finishes it
            announce(f"could not delete the unused namespace {name}: {err}")
        finally:
            api.close()
            if running is not None:
                running.stop()
