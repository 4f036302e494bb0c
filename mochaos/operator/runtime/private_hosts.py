"""Run a process with its own ``/etc/hosts``: a private mount namespace and a bind mount.

The operator dials in-cluster service names (``<logset>-discovery.<ns>.svc``) that no
resolver on this machine knows. The MatrixOne double maps them to the namespace's
loopback address in a hosts file; the manager sees that file as ``/etc/hosts`` through
``unshare -m`` and ``mount --bind`` — as root, or, for another user, inside a user
namespace that maps the user to root (``unshare -r -m``). Nothing changes for any
other process. Without either, the real-operator targets cannot run here: one line
says so.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from mochaos.errors import InfraError

_SCRIPT = 'mount --bind "$1" /etc/hosts && shift && exec "$@"'


@functools.cache
def _unshare_flags() -> tuple[str, ...]:
    """The unshare flags that work for this user (probed once)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        raise InfraError(
            "unshare not found: the operator cannot get a private /etc/hosts",
            hint="install util-linux (Debian: apt-get install util-linux)",
        )
    candidates = [("-m",)] if os.geteuid() == 0 else []
    candidates.append(("-r", "-m"))
    errors = []
    for flags in candidates:
        probe = subprocess.run(
            [unshare, *flags, "sh", "-c", "mount --bind /etc/hosts /etc/hosts"],
            capture_output=True, text=True,
        )  # fmt: skip
        if probe.returncode == 0:
            return flags
        errors.append(f"unshare {' '.join(flags)}: {probe.stderr.strip()[:120]}")
    raise InfraError(
        "cannot give the operator a private /etc/hosts (" + "; ".join(errors) + ")",
        hint="run as root, or enable unprivileged user namespaces "
        "(sysctl kernel.unprivileged_userns_clone=1)",
    )


def hosts_wrapper(hosts_file: Path) -> list[str]:
    """The argv prefix that runs the rest of the command with ``hosts_file`` as /etc/hosts."""
    flags = _unshare_flags()
    return [shutil.which("unshare") or "unshare", *flags, "sh", "-c", _SCRIPT, "sh",
            str(hosts_file)]  # fmt: skip
