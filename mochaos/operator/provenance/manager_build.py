"""Build the operator's manager (``cmd/operator``) from a checkout, cached by commit.

``CGO_ENABLED=0 go build ./cmd/operator`` in the checkout, with the user's Go
environment as it is (``GOFLAGS``, ``GOPROXY``, ``GONOSUMDB``: where the checksum
database does not know MatrixOne's forked modules, set
``GONOSUMDB=github.com/matrixorigin``). Progress is printed per step, the Go output
goes to a build log, and a failure is one line naming the log.

Its first step fetches the modules the build needs, as the build itself would resolve
them (``go list -deps ./cmd/operator``; in workspace mode when the checkout has a
``go.work``), not every module the graph names: ``go mod download`` also asks for
placeholders no build uses (``k8s.io/cloud-provider@v0.0.0`` from ``k8s.io/kubernetes``'s
go.mod, which the module proxy refuses), so it failed on commits that build.

xdist workers share one build: the first builds, the others wait for it and reuse its
result — the binary, or its failure (a build that failed while a worker waited is not
run again for that worker; a later run tries afresh).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from mochaos.errors import BuildError, UsageError
from mochaos.operator.provenance.checkout import Checkout
from mochaos.paths import cache_dir
from mochaos.progress import announce
from mochaos.waitlock import holding

HEARTBEAT = 30.0
"""Seconds between "still building" lines."""
BUILD_LOCK_TIMEOUT = 3600.0
"""Seconds to wait for another process's build of the same commit."""
FAILED_FILE = ".failed"
"""Beside the binary: the last failed build of it (fingerprint, time, message)."""


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise UsageError("go not found on PATH", hint="install Go >= 1.22 to build the operator")
    return go


def _go_version(go: str) -> str:
    return subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True).stdout.strip()


def manager_path(checkout: Checkout) -> Path:
    """Where the manager built from ``checkout`` is cached."""
    return cache_dir() / "operator" / "bin" / checkout.key / "manager"


def build_manager(checkout: Checkout, *, force: bool = False) -> Path:
    """The manager binary for ``checkout``: cached, or built now (progress printed)."""
    go = _go()
    out = manager_path(checkout)
    stamp = out.with_name(".complete")
    fingerprint = f"{checkout.key}/{_go_version(go)}"
    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.with_name("build.log")
    failed = out.with_name(FAILED_FILE)
    arrived = time.time()
    with holding(
        out.with_name(".lock"), timeout=BUILD_LOCK_TIMEOUT,
        waiting=f"waiting for another process building the manager of matrixone-operator "
        f"{checkout.describe} (log: {log})",
        too_long=lambda: BuildError(
            f"another process held the build of {checkout.describe} for over "
            f"{BUILD_LOCK_TIMEOUT:.0f}s", hint=f"see {log}",
        ),
    ):  # fmt: skip
        if not force and out.is_file() and stamp.is_file() and stamp.read_text() == fingerprint:
            return out
        earlier = _failed_while_waiting(failed, fingerprint, arrived)
        if earlier is not None:
            raise earlier
        try:
            _build(go, checkout, out, stamp, fingerprint)
        except BuildError as err:
            failed.write_text(json.dumps(
                {"fingerprint": fingerprint, "t": time.time(), "what": err.what, "hint": err.hint}
            ))  # fmt: skip
            raise
        failed.unlink(missing_ok=True)
    return out


def _failed_while_waiting(failed: Path, fingerprint: str, arrived: float) -> BuildError | None:
    """The failure of the same build that another process recorded after ``arrived``
    (while this one waited for it), or None."""
    try:
        record = json.loads(failed.read_text())
    except (OSError, ValueError):
        return None
    if record.get("fingerprint") != fingerprint or record.get("t", 0.0) < arrived:
        return None
    return BuildError(
        f"{record['what']} (the build another worker ran while this one waited)",
        hint=record.get("hint", ""),
    )


def _build(go: str, checkout: Checkout, out: Path, stamp: Path, fingerprint: str) -> None:
    log = out.with_name("build.log")
    env = dict(os.environ, CGO_ENABLED="0")
    where = f"matrixone-operator {checkout.describe}"
    t0 = time.monotonic()
    announce(f"building the manager of {where} (log: {log})")
    with log.open("w", encoding="utf-8") as fh:
        _step(
            f"[1/2] downloading modules of {where}",
            [go, "list", "-deps", "./cmd/operator"], checkout, env, fh, output=False,
        )  # fmt: skip
        tmp = out.with_name(f".manager.{os.getpid()}")
        _step(
            f"[2/2] go build ./cmd/operator of {where}",
            [go, "build", "-o", str(tmp), "./cmd/operator"], checkout, env, fh,
        )  # fmt: skip
    tmp.replace(out)
    stamp.write_text(fingerprint)
    announce(f"manager of {where} built in {time.monotonic() - t0:.0f}s: {out}")


def _step(
    label: str,
    cmd: list[str],
    checkout: Checkout,
    env: dict[str, str],
    log,
    *,
    output: bool = True,
) -> None:
    """Run one step in the checkout, its errors (and its output, when ``output``) into
    the build log, with a heartbeat line while it runs; BuildError when it fails."""
    announce(label + " …")
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=checkout.path, env=env, stdout=log if output else subprocess.DEVNULL,
        stderr=log,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(HEARTBEAT):
            announce(f"  … {label.split('] ', 1)[-1]}: {time.monotonic() - t0:.0f}s")

    threading.Thread(target=heartbeat, daemon=True).start()
    try:
        rc = proc.wait()
    finally:
        done.set()
    if rc != 0:
        log.flush()
        raise BuildError(_failure(label, Path(log.name)), hint=f"see {log.name}")


def _failure(label: str, log: Path) -> str:
    """One line: the step and the most telling line of Go's output."""
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    telling = next(
        (ln for ln in reversed(lines) if "verifying" in ln or "checksum" in ln or "SECURITY" in ln),
        lines[-1] if lines else "no output",
    )
    hint = ""
    if "checksum" in telling or "verifying" in telling or "sum.golang.org" in telling:
        hint = (
            " (set GONOSUMDB=github.com/matrixorigin: the checksum database does not know "
            "MatrixOne's forked modules)"
        )
    return f"{label.split('] ', 1)[-1]} failed: {telling[:200]}{hint}"
