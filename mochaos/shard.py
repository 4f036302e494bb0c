"""Sharding: ``--mochaos-shard i/n`` runs a stable 1/n of the collected scenarios.

The collected tests are ordered by a hash of their node id taken from the test file's
name on (so neither the rootdir nor where the package is installed matters) and dealt to
the shards in turn: every machine collecting the same scenarios deals them alike, whatever
its collection order, and the shards differ in size by one at most.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple

from mochaos.testids import portable_nodeid, scenario_name


class Shard(NamedTuple):
    """Shard ``index`` (1-based) of ``total``."""

    index: int
    total: int

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


def parse_shard(text: str) -> Shard:
    """``i/n`` with 1 <= i <= n; ValueError saying what to give otherwise."""
    index, sep, total = text.strip().partition("/")
    try:
        shard = Shard(int(index), int(total))
    except ValueError:
        shard = None
    if not sep or shard is None or not 1 <= shard.index <= shard.total:
        raise ValueError(f"{text!r} is not a shard: give i/n with 1 <= i <= n, e.g. 1/4")
    return shard


def shard_key(nodeid: str) -> str:
    """The hash a node id is dealt by: of ``<file name>::<test>``, the same on every machine."""
    return hashlib.sha256(scenario_name(nodeid).encode()).hexdigest()


def select(nodeids: Sequence[str], shard: Shard) -> set[str]:
    """The node ids of ``nodeids`` that fall to ``shard``."""
    ranked = sorted(set(nodeids), key=lambda n: (shard_key(n), portable_nodeid(n), n))
    return {n for i, n in enumerate(ranked) if i % shard.total == shard.index - 1}
