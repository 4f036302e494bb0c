"""Go modules as image sources: the toolchain that builds them, a module's source tree.

A module version is fetched from the module proxy into Go's module cache (``go mod
download -json``), read-only, never into our repository; what the proxy refuses is one
line with its answer. Go commands run as ``env K=V … go -C <dir> …`` so that the build log
shows each one exactly as it can be rerun by hand.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mochaos.errors import BuildError, UsageError
from mochaos.tooling.runner import Runner

DOWNLOAD_TIMEOUT = 1800.0
"""A module and its dependencies from the proxy (MatrixOne's are ~1.6 GB)."""


@dataclass(frozen=True, slots=True)
class GoToolchain:
    """The ``go`` command and what it builds for."""

    path: str
    version: str
    arch: str

    @classmethod
    def find(cls, runner: Runner) -> GoToolchain:
        """The ``go`` on PATH; UsageError (one line) when there is none."""
        path = shutil.which("go")
        if path is None:
            raise UsageError("go not found on PATH", hint="install Go >= 1.22 and put it on PATH")
        out = runner([path, "env", "-json", "GOVERSION", "GOARCH"], what="go env").stdout
        data = json.loads(out)
        return cls(path, data["GOVERSION"], data["GOARCH"])

    def command(
        self,
        args: Sequence[str],
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> list[str]:
        """``env K=V … go [-C cwd] args…``."""
        prefix = ["env", *(f"{k}={v}" for k, v in sorted(env.items()))] if env else []
        where = ["-C", str(cwd)] if cwd is not None else []
        return [*prefix, self.path, *where, *args]


@dataclass(frozen=True, slots=True)
class ModuleSource:
    """A module version unpacked in Go's module cache."""

    module: str
    version: str
    directory: Path
    commit: str
    time: str


def module_source(
    go: GoToolchain, module: str, version: str, *, runner: Runner, env: Mapping[str, str]
) -> ModuleSource:
    """Fetch ``module@version`` (cached by Go); BuildError naming the proxy's refusal."""
    result = runner(
        go.command(["mod", "download", "-json", f"{module}@{version}"], env=env),
        what=f"go mod download {module}@{version}",
        check=False,
        timeout=DOWNLOAD_TIMEOUT,
    )
    try:
        data = json.loads(result.stdout)
    except json.JSONDecodeError:
        data = {"Error": (result.stderr.strip().splitlines() or ["no output"])[-1]}
    if data.get("Error") or not data.get("Dir"):
        why = str(data.get("Error") or "no source directory").splitlines()[0]
        raise BuildError(
            f"the module proxy does not give {module}@{version}: {why[:240]}",
            hint="check GOPROXY, or the version's name",
        )
    origin = data.get("Origin") or {}
    info = Path(data["Info"]) if data.get("Info") else None
    stamp = json.loads(info.read_text()).get("Time", "") if info and info.is_file() else ""
    return ModuleSource(
        module, data["Version"], Path(data["Dir"]), str(origin.get("Hash", "")), stamp
    )
