"""Seeded synthetic histories: a CN pool's life with claims, pods, logs and our actions.

``synthetic(n, seed)`` runs a small random simulation of the operator and of
mo-chaos until the history holds ``n`` entries: claim sets scaled up and down
(our scale intent first), claims bound to Idle pods, migrations requested by the
agent with the source drained, Finalize passes logged every 2 s, pool pods
created and removed, Events and routine log lines. With ``faults`` > 0 the
operator sometimes misbehaves (deletes a migrating claim, leaves a label behind,
binds a held pod, loses a bound pod, stalls a migration or a claim set's status,
gets stuck in Finalize), so every invariant has work to do.
``benchmark/history_scaling.py`` and the checker's equivalence tests use it.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from mochaos.observe.history import History
from mochaos.observe.vocabulary import (
    BIND_SUCCESS,
    DRAIN_SOURCE,
    FINALIZE_ATTEMPT,
    FINALIZE_DONE,
    FINALIZE_RECLAIM,
    FINALIZE_UNFINISHED,
    MIGRATE,
    SCALE_IN_SORT,
    START_BIND,
    SYNCED,
)

from support.builders import HistoryBuilder


@dataclass
class _Pool:
    """What the simulation knows of the objects (the builder keeps the objects themselves)."""

    idle: list[str] = field(default_factory=list)
    bound: dict[str, str] = field(default_factory=dict)
    """claim -> pod"""
    pending: list[str] = field(default_factory=list)
    migrating: set[str] = field(default_factory=set)
    members: dict[str, list[str]] = field(default_factory=dict)
    """claim set -> its live claims"""
    replicas: dict[str, int] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)
    """Pods retired (Terminating or deleted)."""


class _Sim:
    def __init__(self, seed: int, faults: float) -> None:
        self.rng = random.Random(seed)
        self.faults = faults
        self.b = HistoryBuilder()
        self.pool = _Pool()
        self.later: list[tuple[float, int, Callable[[], None]]] = []
        self.count = 0
        self.names = 0

    # -- plumbing ------------------------------------------------------------------

    def fault(self) -> bool:
        return self.rng.random() < self.faults

    def after(self, delay: float, step: Callable[[], None]) -> None:
        self.count += 1
        heapq.heappush(self.later, (self.b.t + delay, self.count, step))

    def advance(self) -> None:
        """Move the clock on, running what was due meanwhile at its own time."""
        target = self.b.t + self.rng.expovariate(8.0)
        while self.later and self.later[0][0] <= target:
            t, _, step = heapq.heappop(self.later)
            self.b.at(max(t, self.b.t))
            step()
        self.b.at(max(target, self.b.t))

    def log(self, msg: str, name: str, **fields: object) -> None:
        """An operator line, stamped a little before it is received (its own clock)."""
        now = self.b.t
        self.b.at(now - self.rng.uniform(0, 0.05)).log(msg, name=name, **fields)
        self.b.at(now)

    def fresh(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}-{self.names}"

    # -- the pool and its pods ---------------------------------------------------------

    def new_pod(self) -> None:
        pod = self.fresh("pool")
        self.b.pod(pod, phase="Unknown")
        self.after(self.rng.uniform(0.5, 3), lambda: self.pod_idle(pod))

    def pod_idle(self, pod: str) -> None:
        if pod in self.pool.idle or pod in self.pool.gone:
            return  # reclaimed twice: a faulty operator bound it twice
        self.b.pod(pod, phase="Idle", claimed_by=None)
        self.pool.idle.append(pod)

    def retire_pod(self) -> None:
        if self.pool.bound and self.fault():  # a bound pod disappears under its claim
            pod = self.rng.choice(sorted(self.pool.bound.values()))
            if pod not in self.pool.gone:
                self.pool.gone.add(pod)
                self.b.delete("Pod", pod)
        elif len(self.pool.idle) > 4:
            pod = self.pool.idle.pop(0)
            self.pool.gone.add(pod)
            self.b.pod(pod, phase="Terminating")
            self.after(1.0, lambda: self.b.delete("Pod", pod))

    # -- claim sets and claims ---------------------------------------------------------

    def new_claimset(self) -> None:
        name = self.fresh("set")
        self.pool.members[name] = []
        self.pool.replicas[name] = 0
        self.b.claimset(name, replicas=0, status_replicas=0, ready=0, by="create")

    def scale(self, name: str, replicas: int) -> None:
        self.b.scale(name, replicas)
        self.pool.replicas[name] = replicas
        self.after(0.05, lambda: self.reconcile_set(name))

    def reconcile_set(self, name: str) -> None:
        members = self.pool.members.get(name)
        if members is None:
            return
        want = self.pool.replicas[name]
        while len(members) < want:
            claim = self.fresh(name)
            members.append(claim)
            self.pool.pending.append(claim)
            self.b.claim(claim, claimset=name, phase="Pending")
        if len(members) > want:
            self.log(SCALE_IN_SORT, name)
            skip = self.rng.random() >= 5 * self.faults  # B2: the seed race's bug, often
            order = sorted(members, key=lambda c: (skip and c in self.pool.migrating, c))
            for claim in order[: len(members) - want]:
                self.delete_claim(claim)
        if not self.fault():  # else the status lags until the next reconcile
            self.b.claimset(name, status_replicas=len(members), ready=len(members))

    def bind(self) -> None:
        if not self.pool.pending or not self.pool.idle:
            return
        claim = self.pool.pending.pop(0)
        pod = self.pool.idle.pop(self.rng.randrange(len(self.pool.idle)))
        if self.pool.bound and self.fault():
            pod = self.rng.choice(sorted(self.pool.bound.values()))  # a pod already held
        self.log(START_BIND, claim)
        self.b.pod(pod, phase="Bound", claimed_by=claim)
        self.b.claim(claim, pod=pod, phase="Bound", store=pod)
        self.log(BIND_SUCCESS, claim, **{"claimed CN": pod})
        self.pool.bound[claim] = pod

    def migrate(self) -> None:
        ready = sorted(set(self.pool.bound) - self.pool.migrating)
        if not ready or not self.pool.idle:
            return
        claim = self.rng.choice(ready)
        source, target = self.pool.bound[claim], self.pool.idle.pop(0)
        self.pool.migrating.add(claim)
        params = {"source": source, "target": target}
        self.b.claim(claim, pod=target, source=source, by="request_migration", params=params)
        self.b.pod(target, phase="Bound", claimed_by=claim)
        self.log(MIGRATE, claim, source=source, target=target)
        self.pool.bound[claim] = target
        if not self.fault():  # else the migration stalls
            self.after(self.rng.uniform(1, 4), lambda: self.drain_source(claim, source))

    def drain_source(self, claim: str, source: str) -> None:
        self.log(DRAIN_SOURCE, claim, pod=source)
        self.b.pod(source, phase="Draining", claimed_by=None)
        self.after(self.rng.uniform(1, 5), lambda: self.finish_migration(claim, source))

    def finish_migration(self, claim: str, source: str) -> None:
        if claim in self.pool.migrating:
            self.pool.migrating.discard(claim)
            self.b.claim(claim, store=self.pool.bound[claim])
            self.b.claim(claim, source=None)
        self.pod_idle(source)

    def delete_claim(self, claim: str) -> None:
        group = next(s for s, m in self.pool.members.items() if claim in m)
        self.pool.members[group].remove(claim)
        if claim in self.pool.pending:
            self.pool.pending.remove(claim)
        self.b.claim(claim, deleting=True)
        pod = self.pool.bound.pop(claim, None)
        self.pool.migrating.discard(claim)
        passes = 1000 if self.fault() else self.rng.randint(1, 3)
        self.after(0.01, lambda: self.finalize(claim, pod, passes))

    def finalize(self, claim: str, pod: str | None, passes: int) -> None:
        self.log(FINALIZE_ATTEMPT, claim)
        if pod is not None:
            self.log(FINALIZE_RECLAIM, claim, cn=pod)
            keep = self.fault()
            self.b.pod(pod, phase="Draining", claimed_by=claim if keep else None)
            self.after(self.rng.uniform(2, 6), lambda: self.pod_idle(pod))
        if passes > 1:
            self.log(FINALIZE_UNFINISHED, claim)
            self.after(2.0, lambda: self.finalize(claim, None, passes - 1))
            return
        self.log(FINALIZE_DONE, claim)
        self.b.claim(claim, finalizers=[])
        self.b.delete("CNClaim", claim)

    # -- one step --------------------------------------------------------------------

    def step(self) -> None:
        self.advance()
        roll = self.rng.random()
        sets = sorted(self.pool.members)
        if roll < 0.05 or not sets:
            self.new_claimset() if len(sets) < 6 else self.new_pod()
        elif roll < 0.15:
            name = self.rng.choice(sets)
            delta = self.rng.choice((-1, 1, 1))
            self.scale(name, max(0, self.pool.replicas[name] + delta))
        elif roll < 0.30:
            self.bind()
        elif roll < 0.36:
            self.migrate()
        elif roll < 0.42:
            self.new_pod() if len(self.pool.idle) < 8 else self.retire_pod()
        elif roll < 0.50:
            kind = self.rng.choice(("Event", "CNPool"))
            self.b.other(kind, self.fresh(kind.lower()))
        else:
            name = self.rng.choice(sets)
            self.log(SYNCED, name)
            if self.rng.random() < 0.02:
                self.b.log("boom\ngoroutine 1", name=name, level="error", error="boom")


def synthetic(n: int, seed: int, *, faults: float = 0.0) -> History:
    """A history of ``n`` entries (see the module docstring); the same for the same seed."""
    sim = _Sim(seed, faults)
    sim.b.marker("scenario")
    while len(sim.b.entries) < n * 0.95:
        sim.step()
    sim.b.marker("epilogue")
    for name in sorted(sim.pool.members):
        if sim.pool.replicas[name]:
            sim.scale(name, 0)
    while len(sim.b.entries) < n:
        sim.advance()
        sim.bind()
        sim.log(SYNCED, "pool")
    return History(sim.b.entries[:n])
