"""An OCI runtime in front of runc that drops the capabilities this host cannot grant.

Docker asks runc for every capability it knows when a container is privileged
(kind's nodes are); where the machine's capability bounding set lacks one
(CAP_SYS_RESOURCE on some VMs), runc fails with "unable to apply caps:
operation not permitted". dockerd runs this shim instead of runc
(``--add-runtime``, see :mod:`mochaos.cluster.kind.engine_host`): on ``create`` and
``run`` it edits the bundle's ``config.json``, on ``exec`` the ``--process``
file (kind runs kubeadm through ``docker exec --privileged``), removing every
capability missing from its own bounding set, then execs the real runc with
the same arguments. Standard library only: it runs as ``python -I -S``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

REAL_RUNC_ENV = "MOCHAOS_REAL_RUNC"
"""The real runc's path, set by the wrapper script dockerd runs."""

CAPABILITIES = (
    "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
    "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
    "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
    "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
    "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
    "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
)  # fmt: skip
"""Linux capability names by number (``include/uapi/linux/capability.h``, 0 to 40)."""

CAP_SETS = ("bounding", "effective", "inheritable", "permitted", "ambient")

GLOBAL_VALUE_FLAGS = frozenset({"--log", "--log-format", "--root", "--criu", "--rootless"})
"""runc's global flags that take a value (``runc --help``); the others are switches."""


def bounding_set(status: str) -> int:
    """The ``CapBnd`` mask of a ``/proc/<pid>/status`` text."""
    for line in status.splitlines():
        if line.startswith("CapBnd:"):
            return int(line.split()[1], 16)
    raise ValueError("no CapBnd line")


def missing_capabilities(mask: int) -> list[str]:
    """``CAP_*`` names (numbers 0 to 40) absent from the bounding set ``mask``."""
    return [f"CAP_{name}" for n, name in enumerate(CAPABILITIES) if not mask >> n & 1]


def strip_capabilities(process: dict, missing: Sequence[str]) -> bool:
    """Remove ``missing`` from every capability set of an OCI ``process``; True if changed."""
    caps = process.get("capabilities") or {}
    changed = False
    for name in CAP_SETS:
        held = caps.get(name)
        if held:
            kept = [c for c in held if c not in missing]
            changed |= len(kept) != len(held)
            caps[name] = kept
    return changed


def _edit(path: Path, missing: Sequence[str], *, whole_spec: bool) -> None:
    spec = json.loads(path.read_text())
    process = spec.get("process", {}) if whole_spec else spec
    if strip_capabilities(process, missing):
        path.write_text(json.dumps(spec))


def _option(args: Sequence[str], *names: str) -> str | None:
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def command_of(args: Sequence[str]) -> tuple[str, list[str]]:
    """runc's subcommand and the arguments after it (global flags skipped)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):
            return arg, list(args[i + 1 :])
        i += 2 if arg in GLOBAL_VALUE_FLAGS else 1
    return "", []


def spec_to_edit(args: Sequence[str], cwd: Path) -> tuple[Path, bool] | None:
    """The JSON file whose capabilities this runc call uses, and whether it is a whole spec."""
    command, rest = command_of(args)
    if command in ("create", "run"):
        bundle = _option(rest, "--bundle", "-b")
        return (Path(bundle) if bundle else cwd) / "config.json", True
    if command == "exec":
        process = _option(rest, "--process", "-p")
        return (Path(process), False) if process else None
    return None


def main(argv: Sequence[str]) -> None:
    """Edit the spec this call uses (when the host lacks capabilities), then exec runc."""
    real = os.environ.get(REAL_RUNC_ENV) or "runc"
    missing = missing_capabilities(bounding_set(Path("/proc/self/status").read_text()))
    target = spec_to_edit(argv, Path.cwd()) if missing else None
    if target is not None and target[0].is_file():
        _edit(target[0], missing, whole_spec=target[1])
    os.execvp(real, [real, *argv])


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
