"""A learn run of the ``migration`` workload, written by hand (its shape as recorded)."""

from __future__ import annotations

from mochaos.explore.points import DRIVE_MARKER, ROLES_ACTION
from mochaos.observe.history import History

from support.builders import HistoryBuilder, bind

ROLES = {
    "x": "migrating claim", "z": "holder claim", "a": "source pod", "b": "target pod",
    "s1": "migrating set", "s2": "holder set",
}  # fmt: skip


def migration_learn_run(*, x: str = "x", z: str = "z", a: str = "a", b: str = "b") -> History:
    """X (on A) migrates onto Z's pod B; a pool pod comes and goes; then the epilogue."""
    roles = {{"x": x, "z": z, "a": a, "b": b}.get(k, k): v for k, v in ROLES.items()}
    h = HistoryBuilder()
    h.at(0).action(ROLES_ACTION, kind="Workload", name="migration", params=roles)
    bind(h, x, a, claimset="s1")
    bind(h, z, b, claimset="s2")
    h.at(1).marker(DRIVE_MARKER)
    h.claim(x, pod=b, source=a, by="request_migration")
    h.at(1.2).pod(b, claimed_by=x)
    h.at(1.3).claim(x, store=b)
    h.at(4).pod(a, phase="Draining", claimed_by=None)
    h.at(7).pod(a, phase="Idle")
    h.at(7.1).claim(x, source=None)
    h.at(7.2).pod("pool-new", phase="Idle")
    h.at(8).delete("Pod", "pool-new")
    h.at(9).marker("settled")
    h.at(9.5).claim(x, deleting=True)
    return h.build()
