"""How a process of the local cluster runs (argv, environment, folder, log), to run it again.

A component kwokctl started, or a double mo-chaos started, is captured from ``/proc``
while it runs; the same :class:`ProcessSpec` starts it again exactly as it ran. A
process is known by its pid *and* its command line (never by name alone): a pid that
now runs something else is not ours.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mochaos.errors import InfraError
from mochaos.procs import cmdline


@dataclass(frozen=True)
class ProcessSpec:
    """One process of the cluster as it ran: enough to start it again the same way."""

    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = "/"
    log: str = ""
    """The file its stdout and stderr are appended to."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (the supervisor's table)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProcessSpec:
        """Inverse of :meth:`to_dict`."""
        return cls(**data)


def capture(name: str, pid: int, *, log: Path) -> ProcessSpec:
    """How the live process ``pid`` runs; InfraError when /proc cannot tell (gone, not ours)."""
    proc = Path(f"/proc/{pid}")
    argv = cmdline(pid)
    try:
        environ = proc.joinpath("environ").read_bytes().split(b"\0")
        cwd = os.readlink(proc / "cwd")
    except OSError as err:
        raise InfraError(
            f"cannot read how {name} (pid {pid}) runs: {err.strerror}",
            hint="mo-chaos must run as the user that started the cluster",
        ) from err
    if not argv:
        raise InfraError(f"{name} (pid {pid}) exited while it was being captured")
    env = dict(e.decode(errors="replace").split("=", 1) for e in environ if b"=" in e)
    return ProcessSpec(name=name, argv=argv, env=env, cwd=cwd, log=str(log))


def spawn(spec: ProcessSpec) -> subprocess.Popen[bytes]:
    """Start ``spec`` in its own session, output appended to its log; the new process."""
    log = Path(spec.log)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            spec.argv,
            env=spec.env,
            cwd=spec.cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def runs(pid: int | None, spec: ProcessSpec) -> bool:
    """True when ``pid`` is alive and runs exactly ``spec``'s command line."""
    return bool(pid) and cmdline(pid) == spec.argv  # type: ignore[arg-type]


def find(spec: ProcessSpec) -> list[int]:
    """Pids of live processes running exactly ``spec``'s command line (its argv names the
    cluster's own files, so a match is this cluster's process)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and cmdline(int(entry.name)) == spec.argv:
            found.append(int(entry.name))
    return sorted(found)


def read_pid(path: Path) -> int | None:
    """The pid in a pid file (None when absent or garbled)."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def write_pid(path: Path, pid: int) -> None:
    """Replace a pid file atomically (a reader never sees it empty)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(f"{pid}\n")
    os.replace(tmp, path)


def last_line(path: Path, *, limit: int = 200) -> str:
    """The last non-empty line of a log file (its tail only), for a one-line reason."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(fh.seek(0, os.SEEK_END) - 4096, 0))
            tail = fh.read().decode(errors="replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    return lines[-1][:limit] if lines else ""
