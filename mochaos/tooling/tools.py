"""The CLIs mo-chaos drives (kind, helm, docker): found on PATH, checked new enough."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass

from mochaos.errors import InfraError
from mochaos.tooling.runner import Runner, reason


@dataclass(frozen=True, slots=True)
class Tool:
    """A CLI we drive, the oldest version we accept, and how to install it."""

    name: str
    minimum: tuple[int, int, int]
    why: str
    install: str
    version_args: tuple[str, ...]


def require_tool(tool: Tool, *, search_path: str | None = None) -> str:
    """The tool's path on PATH (or ``search_path``); InfraError naming the install command."""
    found = shutil.which(tool.name, path=search_path)
    if found is None:
        raise InfraError(f"{tool.name} not found on PATH", hint=f"install it with {tool.install}")
    return found


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first ``vX.Y.Z`` (or ``vX.Y``, patch 0) in a tool's version output."""
    m = re.search(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text)
    return (int(m[1]), int(m[2]), int(m[3] or 0)) if m else None


def check_version(tool: Tool, path: str, *, runner: Runner) -> tuple[int, int, int]:
    """Run the tool's version command; InfraError when it is older than the minimum."""
    result = runner([path, *tool.version_args], what=f"{tool.name} version", timeout=60)
    found = parse_version(result.stdout + result.stderr)
    want = ".".join(map(str, tool.minimum))
    if found is None:
        raise InfraError(
            f"cannot read the version of {tool.name} from {reason(result)!r}",
            hint=f"install {tool.name} >= {want} with {tool.install}",
        )
    if found < tool.minimum:
        have = ".".join(map(str, found))
        raise InfraError(
            f"{tool.name} {have} is too old ({tool.why})",
            hint=f"install {tool.name} >= {want} with {tool.install}",
        )
    return found
