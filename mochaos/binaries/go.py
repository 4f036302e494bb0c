"""Running the Go toolchain for a build: one build log, progress lines, one-line failures.

Every recipe (:mod:`mochaos.binaries.control_plane`, the MatrixOne double's, kruise-manager's)
runs its ``go`` commands through a :class:`Runner`. The environment is fixed
(:func:`build_env`: the local toolchain, no workspace, no cgo); Go's module and build caches
stay in their default places, so a warm machine relinks in seconds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from mochaos.errors import BuildError
from mochaos.progress import announce
from mochaos.tooling.progress_callback import Progress

HEARTBEAT_EVERY = 30.0
"""Seconds between two "still building" lines of one long go command."""

_GO_VERSION: str | None = None


def stderr_progress(line: str) -> None:
    """The default :data:`Progress`: the mochaos logger's live line."""
    announce(line)


def go() -> str:
    """The ``go`` command on PATH; BuildError saying how to get one when there is none."""
    found = shutil.which("go")
    if found is None:
        raise BuildError("go not found", hint="install Go >= 1.26 and put it on PATH")
    return found


def go_version() -> str:
    """``go env GOVERSION`` (asked once per process), part of every build's fingerprint."""
    global _GO_VERSION
    if _GO_VERSION is None:
        out = subprocess.run([go(), "env", "GOVERSION"], capture_output=True, text=True)
        _GO_VERSION = out.stdout.strip() or "unknown"
    return _GO_VERSION


def build_env() -> dict[str, str]:
    """The environment of every go command of a build."""
    env = dict(os.environ)
    env.update({"GOTOOLCHAIN": "local", "GOWORK": "off", "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"})
    return env


def elapsed(seconds: float) -> str:
    """A build step's duration as its progress lines show it (``1m05s``, ``42s``)."""
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def fresh_dir(path: Path) -> Path:
    """``path`` as an empty folder (what was there is removed)."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


@dataclass
class Runner:
    """Runs go commands into one build log, with a heartbeat on long steps."""

    log_path: Path
    progress: Progress
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        shown = self.progress

        def both(line: str) -> None:
            # Every progress line also goes to the build log, timestamped, for bench/.
            shown(line)
            with self.log_path.open("a", encoding="utf-8") as log:
                log.write(f"[{datetime.now(UTC):%Y-%m-%dT%H:%M:%S.%fZ}] {line}\n")

        self.progress = both

    def run(
        self,
        args: list[str],
        *,
        cwd: Path,
        label: str,
        module: str,
        outputs: dict[str, Path] | None = None,
        env: dict[str, str] | None = None,
    ) -> str:
        """Run one command; raise BuildError with a one-line reason on failure.

        ``outputs`` names binaries the command writes: each is announced (with the
        elapsed time) as soon as its file appears, so one ``go build`` of several
        commands still shows progress per binary.
        """
        t0 = time.monotonic()
        lines = 0
        done = threading.Event()
        pending = dict(outputs or {})
        total = len(pending)

        def heartbeat() -> None:
            last_beat = time.monotonic()
            while not done.wait(1):
                for name, path in list(pending.items()):
                    if path.exists():
                        del pending[name]
                        n = total - len(pending)
                        took = elapsed(time.monotonic() - t0)
                        self.progress(f"  [{n}/{total}] {name} built in {took}")
                if time.monotonic() - last_beat >= HEARTBEAT_EVERY:
                    last_beat = time.monotonic()
                    took = elapsed(time.monotonic() - t0)
                    self.progress(f"  … {label}: {took}, {lines} packages")

        beat = threading.Thread(target=heartbeat, daemon=True)
        beat.start()
        out_lines: list[str] = []
        with self.log_path.open("a", encoding="utf-8") as log:
            log.write(f"\n$ (cd {cwd} && {' '.join(args)})\n")
            log.flush()
            proc = subprocess.Popen(
                args,
                cwd=cwd,
                env={**build_env(), **(env or {})},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                out_lines.append(line)
                if not line.startswith(("go: ", "#")):
                    lines += 1
            rc = proc.wait()
        done.set()
        beat.join()
        if rc != 0:
            raise BuildError(
                diagnose("".join(out_lines), module), hint=f"see the build log {self.log_path}"
            )
        return "".join(out_lines)


def diagnose(output: str, module: str) -> str:
    """Turn go's output into a one-line reason."""
    if re.search(r"(dial tcp|no such host|connection refused|i/o timeout|TLS handshake)", output):
        return f"module proxy unreachable: {module}"
    m = re.search(r"(\S+@\S+): reading \S+: (\d{3}) ", output)
    if m:
        return f"module proxy refused {m.group(1)} (HTTP {m.group(2)})"
    if "requires go >=" in output or "toolchain not available" in output:
        return f"{module} needs a newer Go than {go_version()}"
    first_error = next((ln.strip() for ln in output.splitlines() if ln.strip()), "no output")
    return f"building {module} failed: {first_error[:200]}"


def module_download(runner: Runner, module: str, workdir: Path) -> dict[str, str]:
    """``go mod download -json module@version``: where Go put it (``Dir``, ``GoMod``)."""
    out = runner.run(
        [go(), "mod", "download", "-json", module],
        cwd=workdir,
        label=f"download {module}",
        module=module,
    )
    try:  # go's own lines ("go: downloading …") may come before the JSON object
        found, _ = json.JSONDecoder().raw_decode(out[out.index("{") :])
    except ValueError:
        found = {}
    if not found.get("GoMod") or not found.get("Dir"):
        raise BuildError(f"module proxy unreachable: {module}", hint="check GOPROXY")
    return found


def module_gomod(runner: Runner, module: str, workdir: Path) -> str:
    """The go.mod of ``module@version``, fetched through the module proxy."""
    return Path(module_download(runner, module, workdir)["GoMod"]).read_text()


def go_build(
    runner: Runner,
    out: Path,
    package: str,
    *,
    cwd: Path,
    module: str,
    what: str,
    step: tuple[int, int] = (1, 1),
    ldflags: str = "-s -w",
    env: dict[str, str] | None = None,
) -> None:
    """``go build`` ``package`` into ``out``, with its progress lines: the ``step`` of how
    many, ``what`` is built (a version), how long it took."""
    i, n = step
    t0 = time.monotonic()
    runner.progress(f"  [{i}/{n}] {out.name} {what} …")
    runner.run(
        [go(), "build", "-v", "-trimpath", "-ldflags", ldflags, "-o", str(out), package],
        cwd=cwd, label=out.name, module=module, env=env,
    )  # fmt: skip
    runner.progress(f"  [{i}/{n}] {out.name} built in {elapsed(time.monotonic() - t0)}")
