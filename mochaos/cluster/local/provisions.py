"""What operator targets asked the local cluster to run beside its control plane.

A target declares an :class:`~mochaos.cluster.environment.Environment` (kruise-manager, the
MatrixOne double); :meth:`Provisions.provide` builds what is missing, records it in the
cluster's folder (so that a kept cluster brings it back) and starts it; each double is
started, refreshed when stale and checked through :mod:`mochaos.cluster.local.doubles_host`
under the cluster's supervision. Relies on
:class:`~mochaos.cluster.local.components.Components` for ``_control_plane_problems``.
"""

from __future__ import annotations

from collections.abc import Callable

from mochaos.cluster import environment
from mochaos.cluster.environment import Environment
from mochaos.cluster.local import doubles_host
from mochaos.cluster.local.cluster_dir import COMPONENTS, LocalClusterBase
from mochaos.doubles import DoubleContext, DoubleSpec
from mochaos.errors import InfraError
from mochaos.progress import announce


class Provisions(LocalClusterBase):
    """The environment targets asked for, and the doubles that run it."""

    @property
    def environment(self) -> Environment:
        """What targets asked this cluster to run so far (:meth:`provide`)."""
        return environment.read(self.cluster_dir)

    @property
    def doubles(self) -> tuple[DoubleSpec, ...]:
        """Every process run beside the control plane: the given doubles, then the
        environment's (:func:`mochaos.cluster.environment.parts`)."""
        parts = environment.parts(self.environment)
        return (
            *self._explicit,
            *(p for p in parts if p.name not in {d.name for d in self._explicit}),
        )

    def provide(self, env: Environment) -> None:
        """Run ``env`` on this (running) cluster besides what it runs already: build what is
        missing, start it, wait until healthy. A kruise-manager of another version is
        replaced by the one asked for."""
        if not self.kubeconfig_path().exists():
            raise InfraError(
                f"cluster {self.cluster_name} is not running: nothing to provide "
                f"{env.describe()} to",
                hint="start it first (python -m mochaos cluster up)",
            )
        environment.build(env)  # outside the cluster's lock: a cold build takes minutes
        with self._lock():
            wanted = environment.merged(self.environment, env)
            if wanted == self.environment and not self._double_problems():
                return
            doubles_host.check_registry(environment.parts(wanted), COMPONENTS)
            announce(f"cluster {self.cluster_name}: providing {wanted.describe()}")
            environment.write(self.cluster_dir, wanted)
            self._refresh_doubles()
            self._start_doubles(only_missing=True)

    def _refresh_doubles(self) -> None:
        """Take the stale doubles (:func:`doubles_host.stale`) out of the supervisor's table,
        stopping those that run, so that ``_start_doubles`` starts them afresh once the
        control plane answers: a double restarted from a gone run's entry would start
        before the apiserver, or run code this mo-chaos no longer has."""
        contexts = {d.name: self._double_context(d) for d in self.doubles}
        restarting = self.supervision.pid() is not None
        old = doubles_host.stale(self.doubles, contexts, self.supervision, restarting=restarting)
        if not old:
            return
        names = {s.name for s in old}
        for name in names:
            self.supervision.hold(name)
        try:
            self.supervision.set_table([s for s in self.supervision.table() if s.name not in names])
            doubles_host.stop_specs(self.supervision, old)
        finally:
            for name in names:
                self.supervision.release(name)
        announce(
            f"cluster {self.cluster_name}: doubles to start afresh: {', '.join(sorted(names))}"
        )

    def _start_doubles(self, *, only_missing: bool = False) -> None:
        """Start the registered doubles (those not running, with ``only_missing``) and wait
        until every one is healthy."""
        contexts = {d.name: self._double_context(d) for d in self.doubles}
        for double in self.doubles:
            if only_missing and doubles_host.running(double, self.supervision) is not None:
                continue
            if only_missing and any(s.name == double.name for s in self.supervision.table()):
                continue  # in the table but down: the supervisor is restarting it
            doubles_host.start(double, contexts[double.name], self.supervision)
        doubles_host.wait_healthy(
            self.doubles, contexts, self.supervision, timeout=doubles_host.READY_TIMEOUT
        )

    def _double_context(self, double: DoubleSpec) -> DoubleContext:
        return doubles_host.context(
            double, cluster_name=self.cluster_name, cluster_dir=self.cluster_dir
        )

    def _double(self, name: str) -> DoubleSpec | None:
        return next((d for d in self.doubles if d.name == name), None)

    def dependency_checks(self) -> dict[str, Callable[[], str | None]]:
        """For each double (what runs beside the control plane for the operator): why it is
        unavailable now — not running as the supervisor's table says, restarted since the
        last look (a crash the supervisor mended between two probes), or failing its
        health check — or None (see :mod:`mochaos.observe.periods`)."""

        def check(double: DoubleSpec) -> Callable[[], str | None]:
            ctx = self._double_context(double)
            seen: list[int | None] = [None]

            def now() -> str | None:
                pid = doubles_host.running(double, self.supervision)
                before, seen[0] = seen[0], pid
                if pid is None:
                    return "not running"
                if before is not None and before != pid:
                    return f"restarted (pid {before} -> {pid})"
                return doubles_host.health(double, ctx)

            return now

        return {d.name: check(d) for d in self.doubles}

    def _double_problems(self) -> list[str]:
        return [f"double {d.name}: {p}" for d, p in self._double_health() if p is not None]

    def _double_health(self) -> list[tuple[DoubleSpec, str | None]]:
        out = []
        for double in self.doubles:
            if doubles_host.running(double, self.supervision) is None:
                out.append((double, "not running"))
            else:
                out.append((double, doubles_host.health(double, self._double_context(double))))
        return out
