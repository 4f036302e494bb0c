"""Named workloads: the fault-free parts of the suites, shared by the suites and ``explore``.

A workload builds a topology (:meth:`NamedWorkload.setup`), names the role each of its
objects plays (:meth:`NamedWorkload.roles`: "migrating claim", "source pod", …) and
drives the operator through its job (:meth:`NamedWorkload.drive`) without any fault. A
suite adds its hand-written fault between the two; an exploration learns where to put one.

The seed race's topology is the bug report's own reproduction (docs/operator-behaviour.md
§11.3): claim X of set S1 is migrated onto the pod B of claim Z (set S2), then S1 is scaled
in while X's source drains. Y's pod serves one session, so the operator's own deletion-cost
tie-breaker — not creation-time luck — decides which claim a scale-in prefers: the migrating
X, whose target B has no sessions yet (docs/bugs.md#b2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from mochaos.errors import UsageError
from mochaos.faults import delete_pod
from mochaos.scenario._engine import Scenario
from mochaos.scenario._gate import Fired
from mochaos.scenario._predicates import claim_bound, deletion_cost_is, held_by_set

POOL = "pool"


@dataclass(frozen=True)
class SeedTopology:
    """Names in the seed race: claims X, Y (set S1), Z (set S2) and their pods A, C, B."""

    x: str
    y: str
    z: str
    a: str
    b: str
    c: str


def build_s1(sc: Scenario, *, max_idle: int = 2) -> tuple[str, str]:
    """A pool with idle pods and S1 = {X, Y} bound; Y's pod serves one session."""
    sc.topology.pool("pool", max_idle=max_idle)
    x, y = sc.topology.claimset("s1", replicas=2)
    c = sc.topology.pod_of(y)
    sc.topology.set_sessions(c, 1)
    sc.when(deletion_cost_is(c, "1"), timeout=sc.waits.deletion_cost)
    return x, y


def build_seed(sc: Scenario) -> SeedTopology:
    """S1 = {X, Y} and S2 = {Z}, all bound; Y's pod serves one session.

    Independent waits overlap: the pool warms up three idle pods at once (one warm-up,
    not one per claim set) and both sets bind from them together. C's deletion cost is
    awaited before returning: a scale-in before the store published it would let
    creation-time luck, not sessions, pick the victim. So is the operator's pass that
    follows each bind (:meth:`Workload.settled`): the race starts on settled claims, as
    in production. The topology means the same as building the sets one by one.
    """
    sc.topology.pool("pool", max_idle=3)
    sc.topology.claimset("s1", replicas=2, wait=False)
    sc.topology.claimset("s2", replicas=1, wait=False)
    x, y = sc.topology.bound_claims("s1", 2)
    (z,) = sc.topology.bound_claims("s2", 1)
    c = sc.topology.pod_of(y)
    sc.topology.set_sessions(c, 1)
    sc.when(deletion_cost_is(c, "1"), timeout=sc.waits.deletion_cost)
    sc.topology.settled([x, y, z])
    return SeedTopology(x=x, y=y, z=z, a=sc.topology.pod_of(x), b=sc.topology.pod_of(z), c=c)


class NamedWorkload(Protocol):
    """What a workload offers: a topology, its roles, and the fault-free drive."""

    name: str
    summary: str

    def setup(self, sc: Scenario) -> Any:
        """Build the topology; return its names (a topology object)."""
        ...

    def roles(self, topology: Any) -> dict[str, str]:
        """Object name -> the role it plays (claims, pods, claim sets of the topology)."""
        ...

    def drive(self, sc: Scenario, topology: Any) -> None:
        """The workload's own operations, without any fault."""
        ...


class Migration:
    """The seed race without its fault: S1 = {X, Y}, S2 = {Z}; the agent migrates X onto
    Z's pod B (docs/operator-behaviour.md §11.3)."""

    name = "migration"
    summary = "pool, two claim sets, the agent migrating X onto the pod another set's Z holds"

    def setup(self, sc: Scenario) -> SeedTopology:
        """:func:`build_seed`."""
        return build_seed(sc)

    def roles(self, topology: SeedTopology) -> dict[str, str]:
        """X migrates from A onto B, which Z holds; Y and its pod C are X's siblings."""
        t = topology
        return {
            t.x: "migrating claim", t.y: "sibling claim", t.z: "holder claim",
            t.a: "source pod", t.b: "target pod", t.c: "sibling pod",
            "s1": "migrating set", "s2": "holder set",
        }  # fmt: skip

    def drive(self, sc: Scenario, topology: SeedTopology) -> None:
        """The agent's migration request of X onto B (retried every 5 s)."""
        sc.agent.request_migration(topology.x, target=topology.b)


@dataclass(frozen=True)
class RaceTopology:
    """X and Y of S1 (X on pod A); the Idle pod the agent picked; Z of S2, which took it."""

    x: str
    y: str
    a: str
    target: str
    z: str


class MigrationRace:
    """The double reference from a real race: the agent picks an Idle pod for X, S2's Z
    binds it first, then the agent's request lands."""

    name = "migration-race"
    summary = "the agent picks an Idle pod for X, another set binds it first, X migrates onto it"

    def setup(self, sc: Scenario) -> RaceTopology:
        """S1 = {X, Y} on a pool of one idle pod; the agent's pick; S2 = {Z} bound."""
        x, y = build_s1(sc, max_idle=1)
        a = sc.topology.pod_of(x)
        sc.topology.idle_pods(POOL, at_least=1)
        target = sc.agent.pick_target(x)
        (z,) = sc.topology.claimset("s2", replicas=1)
        return RaceTopology(x=x, y=y, a=a, target=target, z=z)

    def roles(self, topology: RaceTopology) -> dict[str, str]:
        """As in ``migration``: the picked pod is the target, Z its holder."""
        t = topology
        return {
            t.x: "migrating claim", t.y: "sibling claim", t.z: "holder claim",
            t.a: "source pod", t.target: "target pod",
            "s1": "migrating set", "s2": "holder set",
        }  # fmt: skip

    def drive(self, sc: Scenario, topology: RaceTopology) -> None:
        """Once a claim of S2 holds the picked pod, the agent's stale request for X lands."""
        held = sc.when(held_by_set(topology.target, "s2"), timeout=sc.waits.migration_phase)
        sc.agent.request_migration(topology.x, target=topology.target, trigger=held)


@dataclass(frozen=True)
class BindTopology:
    """Claim X of S1 on pod ``source``; the Idle pod the agent will move it to; claim Y."""

    x: str
    source: str
    target: str
    y: str = "y"


class Bind:
    """A Pending claim binds from the pool while a migration names an Idle pod (#581)."""

    name = "bind"
    summary = "a new claim binds from a pool of one idle pod while X migrates onto that pod"

    def setup(self, sc: Scenario) -> BindTopology:
        """A pool of one idle pod, S1 = {X} bound, the agent's pick of an Idle pod."""
        sc.topology.pool(POOL, max_idle=1)
        (x,) = sc.topology.claimset("s1", replicas=1)
        sc.topology.idle_pods(POOL, at_least=1)
        return BindTopology(x=x, source=sc.topology.pod_of(x), target=sc.agent.pick_target(x))

    def roles(self, topology: BindTopology) -> dict[str, str]:
        """X migrates from its pod onto the target; Y is the new claim; S1 is X's set."""
        t = topology
        return {
            t.x: "migrating claim", t.y: "new claim", t.source: "source pod",
            t.target: "target pod", "s1": "migrating set",
        }  # fmt: skip

    def drive(self, sc: Scenario, topology: BindTopology) -> None:
        """Claim Y is created, and the agent asks X to migrate onto the picked pod."""
        sc.topology.claim(topology.y, wait_bound=False)
        sc.agent.request_migration(topology.x, target=topology.target)


@dataclass(frozen=True)
class PodLossTopology:
    """A standalone claim X bound to ``pod``."""

    x: str
    pod: str


class PodLoss:
    """A claim's pod disappears under it (docs/bugs.md#b3, #b4)."""

    name = "pod-loss"
    summary = "a standalone claim bound from a pool of one idle pod; its pod is deleted"

    def setup(self, sc: Scenario) -> PodLossTopology:
        """A pool of one idle pod and a standalone claim X, Bound."""
        sc.topology.pool(POOL, max_idle=1)
        x = sc.topology.claim("x")
        return PodLossTopology(x=x, pod=sc.topology.pod_of(x))

    def roles(self, topology: PodLossTopology) -> dict[str, str]:
        """X is the bound claim, its pod the lost one."""
        return {topology.x: "bound claim", topology.pod: "lost pod"}

    def drive(self, sc: Scenario, topology: PodLossTopology) -> None:
        """While X is Bound, its pod is deleted."""
        self.lose_pod(sc, topology, trigger=sc.when(claim_bound(topology.x), timeout=sc.waits.bind))

    def lose_pod(self, sc: Scenario, topology: PodLossTopology, *, trigger: Fired) -> None:
        """Delete X's pod once ``trigger`` held (gated: its window is checked)."""
        sc.inject(delete_pod(topology.pod), trigger=trigger)


@dataclass(frozen=True)
class ScaleTopology:
    """Claim X of S1 on ``pod``."""

    x: str
    pod: str


SCALE_OUT_TO = 3
"""Replicas the ``scale`` workload scales S1 out to before scaling it back in to one."""


class Scale:
    """A claim set scaled out, then back in."""

    name = "scale"
    summary = f"a claim set of one scaled out to {SCALE_OUT_TO}, then back in to one"

    def setup(self, sc: Scenario) -> ScaleTopology:
        """A pool of two idle pods and S1 = {X} bound."""
        sc.topology.pool(POOL, max_idle=2)
        (x,) = sc.topology.claimset("s1", replicas=1)
        return ScaleTopology(x=x, pod=sc.topology.pod_of(x))

    def roles(self, topology: ScaleTopology) -> dict[str, str]:
        """X is the first claim of the scaled set S1, on the first pod."""
        return {topology.x: "first claim", topology.pod: "first pod", "s1": "scaled set"}

    def drive(self, sc: Scenario, topology: ScaleTopology) -> None:
        """S1 out to three Bound claims, then in to one."""
        sc.topology.scale("s1", replicas=SCALE_OUT_TO)
        sc.topology.bound_claims("s1", SCALE_OUT_TO)
        sc.topology.scale("s1", replicas=1)


MIGRATION = Migration()
MIGRATION_RACE = MigrationRace()
BIND = Bind()
POD_LOSS = PodLoss()
SCALE = Scale()

WORKLOADS: dict[str, NamedWorkload] = {
    w.name: w for w in (MIGRATION, MIGRATION_RACE, BIND, POD_LOSS, SCALE)
}


def get_workload(name: str) -> NamedWorkload:
    """The workload of that name; UsageError naming the known ones otherwise."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise UsageError(
            f"unknown workload {name!r}", hint=f"use one of {', '.join(WORKLOADS)}"
        ) from None
