"""Runs the environment doubles (:mod:`mochaos.doubles`), and kruise-manager, on a local cluster.

After the control plane is Ready, each double an operator target needs gets its folder
(``<cluster>/doubles/<name>``) and log (``<cluster>/logs/<name>.log``), is prepared,
started in the foreground of its own session, added to the supervisor's table (so it
is restarted like a component when it exits), and waited on until its health check
says nothing is wrong.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from pathlib import Path

from mochaos.cluster import events
from mochaos.cluster.local.processes import (
    ProcessSpec,
    last_line,
    read_pid,
    runs,
    spawn,
    write_pid,
)
from mochaos.cluster.local.supervisor import KUBECONFIG_FILE, Supervision
from mochaos.doubles import DoubleContext, DoubleSpec, state_dir
from mochaos.errors import InfraError, UsageError
from mochaos.procs import executable_replaced, stop_group
from mochaos.progress import announce

READY_TIMEOUT = 60.0
"""Seconds a double may take from its start until its health check passes."""
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,40}$")


def check_registry(doubles: Sequence[DoubleSpec], reserved: Sequence[str]) -> None:
    """UsageError when two doubles share a name, or a name is not a plain file name or is
    one of the control plane's components."""
    seen: set[str] = set()
    for d in doubles:
        if not _NAME.match(d.name) or d.name in reserved or d.name in seen:
            raise UsageError(
                f"double name {d.name!r} is invalid or taken",
                hint="use a unique lower-case name (letters, digits, '-') that is not a "
                f"component of the cluster ({', '.join(reserved)})",
            )
        seen.add(d.name)


def context(double: DoubleSpec, *, cluster_name: str, cluster_dir: Path) -> DoubleContext:
    """The double's context on this cluster (folders not created yet)."""
    return DoubleContext(
        cluster_name=cluster_name,
        kubeconfig=cluster_dir / KUBECONFIG_FILE,
        state_dir=state_dir(cluster_dir, double.name),
        log_path=cluster_dir / "logs" / f"{double.name}.log",
    )


def health(double: DoubleSpec, ctx: DoubleContext) -> str | None:
    """The double's own health line; an exception from the probe counts as unhealthy."""
    try:
        return double.health(ctx)
    except Exception as err:
        return f"health check raised {type(err).__name__}: {err}"


def start(double: DoubleSpec, ctx: DoubleContext, supervision: Supervision) -> int:
    """Prepare and start one double, hand it to the supervisor; its pid."""
    ctx.state_dir.mkdir(parents=True, exist_ok=True)
    ctx.log_path.parent.mkdir(parents=True, exist_ok=True)
    announce(f"starting {double.kind} {double.name} ({double.description})")
    if double.prepare is not None:
        double.prepare(ctx)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "KUBECONFIG"))}
    env.update(double.env(ctx) if double.env is not None else {})
    spec = ProcessSpec(
        name=double.name, argv=list(double.command(ctx)), env=env, cwd=str(ctx.state_dir),
        log=str(ctx.log_path),
    )  # fmt: skip
    try:
        proc = spawn(spec)
    except OSError as err:
        raise InfraError(
            f"{double.kind} {double.name} could not start: {err}", hint="check its command"
        ) from err
    write_pid(supervision.process_pid_file(double.name), proc.pid)
    supervision.add(spec)
    return proc.pid


def wait_healthy(
    doubles: Sequence[DoubleSpec],
    contexts: dict[str, DoubleContext],
    supervision: Supervision,
    *,
    timeout: float,
) -> None:
    """Wait until every double's health check passes; InfraError naming the last problem,
    with the supervisor's last failure to start it or else the last line of its log."""
    since = time.time()
    deadline = time.monotonic() + timeout
    for double in doubles:
        while (problem := health(double, contexts[double.name])) is not None:
            if time.monotonic() >= deadline:
                log = contexts[double.name].log_path
                raise InfraError(
                    f"{double.kind} {double.name} not healthy after {timeout:.0f}s: {problem}"
                    + _why(double.name, log, supervision, since),
                    hint=f"see {log}",
                )
            time.sleep(0.2)


def _why(name: str, log: Path, supervision: Supervision, since: float) -> str:
    """What the supervisor or the double's log last said, as a clause for the error."""
    failed = [
        e
        for e in events.read(supervision.events_file)
        if e.component == name and e.event == "restart-failed" and e.t >= since
    ]
    if failed:
        return f"; the supervisor cannot start it: {failed[-1].exit}"
    said = last_line(log)
    return f"; its log ends: {said}" if said else ""


def running(double: DoubleSpec, supervision: Supervision) -> int | None:
    """The double's pid when its process runs (as the supervisor's table says it should)."""
    spec = next((s for s in supervision.table() if s.name == double.name), None)
    return None if spec is None else _pid_running(supervision, spec)


def _pid_running(supervision: Supervision, spec: ProcessSpec) -> int | None:
    """The pid in ``spec``'s pid file when that process runs ``spec``'s command line."""
    pid = read_pid(supervision.process_pid_file(spec.name))
    return pid if runs(pid, spec) else None


def stop_all(supervision: Supervision, names: Sequence[str], *, grace: float = 5.0) -> None:
    """Stop the named doubles (SIGTERM, then SIGKILL; by pid, command line checked)."""
    stop_specs(supervision, [s for s in supervision.table() if s.name in names], grace=grace)


def stop_specs(
    supervision: Supervision, specs: Sequence[ProcessSpec], *, grace: float = 5.0
) -> None:
    """Stop the doubles that run as ``specs`` (each leads its own session: SIGTERM to its
    group, then SIGKILL; by pid, command line checked); one that does not run is skipped."""
    for spec in specs:
        pid = _pid_running(supervision, spec)
        if pid is not None:
            stop_group(pid, spec.argv, grace)


def stale(
    doubles: Sequence[DoubleSpec],
    contexts: dict[str, DoubleContext],
    supervision: Supervision,
    *,
    restarting: bool,
) -> list[ProcessSpec]:
    """The table's entries of ``doubles`` that must be started afresh: each recorded with
    another command than this mo-chaos would start (its interpreter, its code digest or its
    binary's path changed since), each running a binary rebuilt since it started, and,
    unless the supervisor is ``restarting`` them, each that does not run (its entry holds
    the environment of a run that is gone)."""
    registered = {d.name: d for d in doubles}
    out = []
    for spec in supervision.table():
        double = registered.get(spec.name)
        if double is None:
            continue
        pid = _pid_running(supervision, spec)
        try:
            wanted = list(double.command(contexts[spec.name]))
        except InfraError:  # its command cannot be made yet (prepare has not run for it)
            wanted = []
        if (
            spec.argv != wanted
            or (pid is not None and executable_replaced(pid))
            or (pid is None and not restarting)
        ):
            out.append(spec)
    return out
