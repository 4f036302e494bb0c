"""Traffic between a trial's containers on hosts whose firewall drops bridged packets.

With br_netfilter on (``net.bridge.bridge-nf-call-iptables = 1``) a bridge's packets go
through iptables' FORWARD chain. An engine that manages iptables accepts its own bridges'
traffic there; an engine started with ``--iptables=false`` does not, and when another
engine on the host has set FORWARD's policy to DROP (Docker does), that bridge's
containers cannot reach each other. Detected, not assumed: only in that case one rule
accepting the bridge's own traffic (into and out of that one bridge) is put first in
DOCKER-USER (FORWARD when there is none), with the reason printed, and taken out again
when the trial ends.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from mochaos.tooling.progress_callback import Progress
from mochaos.tooling.runner import Runner

BRIDGE_NF = Path("/proc/sys/net/bridge/bridge-nf-call-iptables")
Undo = Callable[[], None]


def nothing() -> None:
    """Nothing to undo."""


def needs_accept(bridge: str, *, forward_rules: str, bridge_nf: str) -> bool:
    """True when bridged packets are filtered, FORWARD drops by default and no rule names
    ``bridge`` (``forward_rules`` as ``iptables -S FORWARD`` prints them)."""
    lines = forward_rules.splitlines()
    dropping = "-P FORWARD DROP" in lines
    named = any(f" {bridge} " in f"{line} " for line in lines if line.startswith("-A "))
    return bridge_nf.strip() == "1" and dropping and not named


def accept_bridge(bridge: str, *, runner: Runner, progress: Progress) -> Undo:
    """Accept ``bridge``'s own traffic if the host would drop it (see the module docstring);
    the function that takes the rule out again."""
    if not BRIDGE_NF.exists() or shutil.which("iptables") is None:
        return nothing
    rules = runner(["iptables", "-S", "FORWARD"], what="iptables -S FORWARD", check=False)
    if rules.returncode != 0 or not needs_accept(
        bridge, forward_rules=rules.stdout, bridge_nf=BRIDGE_NF.read_text()
    ):
        return nothing
    chain = "DOCKER-USER" if "-A FORWARD -j DOCKER-USER" in rules.stdout.splitlines() else "FORWARD"
    rule = ["-i", bridge, "-o", bridge, "-j", "ACCEPT"]
    progress(
        f"trial: this host drops bridged traffic (FORWARD policy DROP, br_netfilter on) and "
        f"the engine adds no rule for {bridge}: accepting {bridge}'s own traffic in {chain} "
        "until the trial ends"
    )
    runner(["iptables", "-I", chain, "1", *rule], what=f"iptables -I {chain}")

    def undo() -> None:
        runner(["iptables", "-D", chain, *rule], what=f"iptables -D {chain}", check=False)

    return undo
