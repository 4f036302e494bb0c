"""Build the operator's manager (``cmd/operator``) from a checkout, cached by commit.

``CGO_ENABLED=0 go build ./cmd/operator`` in the checkout, with the user's Go
environment as it is (``GOFLAGS``, ``GOPROXY``, ``GONOSUMDB``: where the checksum
database does not know MatrixOne's forked modules, set
``GONOSUMDB=github.com/matrixorigin``). Progress is printed per step, the Go output
goes to a build log, and a failure is one line naming the log.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from mochaos.errors import BuildError, UsageError
from mochaos.operator.checkout import Checkout
from mochaos.paths import cache_dir
from mochaos.progress import announce
from mochaos.waitlock import holding

HEARTBEAT = 30.0
"""Seconds between "still building" lines."""
BUILD_LOCK_TIMEOUT = 3600.0
"""Seconds to wait for another process's build of the same commit."""


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
    # xdist workers share one build: the first builds, the others wait and reuse it.
    log = out.with_name("build.log")
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
        _build(go, checkout, out, stamp, fingerprint)
    return out


def _build(go: str, checkout: Checkout, out: Path, stamp: Path, fingerprint: str) -> None:
    log = out.with_name("build.log")
    env = dict(os.environ, CGO_ENABLED="0")
    where = f"matrixone-operator {checkout.describe}"
    t0 = time.monotonic()
    announce(f"building the manager of {where} (log: {log})")
    with log.open("w", encoding="utf-8") as fh:
        _step(f"[1/2] downloading modules of {where}", [go, "mod", "download"], checkout, env, fh)
        tmp = out.with_name(f".manager.{os.getpid()}")
        _step(
            f"[2/2] go build ./cmd/operator of {where}",
            [go, "build", "-o", str(tmp), "./cmd/operator"], checkout, env, fh,
        )  # fmt: skip
    tmp.replace(out)
    stamp.write_text(fingerprint)
    announce(f"manager of {where} built in {time.monotonic() - t0:.0f}s: {out}")


def _step(label: str, cmd: list[str], checkout: Checkout, env: dict[str, str], log) -> None:
    announce(label + " …")
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=checkout.path, env=env, stdout=log, stderr=subprocess.STDOUT,
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
