"""Reading go.mod files: the replace directives a wrapper module must repeat.

A module whose go.mod replaces its dependencies (k8s.io/kubernetes, MatrixOne,
OpenKruise) cannot be ``go install``-ed; a wrapper module that requires it builds it
once it repeats those replacements (Go ignores a dependency's replace directives).
"""

from __future__ import annotations

import re
from pathlib import Path

_REPLACE_LINE = re.compile(r"^\s*(?:replace\s+)?(\S+(?:\s+v\S+)?)\s+=>\s+(\S+)\s+(v\S+)\s*$")


def replace_lines(gomod: str) -> list[str]:
    """The module replacements of a go.mod, as single-line directives.

    Local-path replacements (``=> ./x``) are left out: they only make sense inside
    that module's own tree.
    """
    out: list[str] = []
    in_block = False
    for raw in gomod.splitlines():
        line = raw.split("//", 1)[0].rstrip()
        stripped = line.strip()
        if stripped.startswith("replace ("):
            in_block = True
            continue
        if in_block and stripped == ")":
            in_block = False
            continue
        if not (in_block or stripped.startswith("replace ")):
            continue
        m = _REPLACE_LINE.match(stripped)
        if m and not m.group(2).startswith("."):
            out.append(f"replace {m.group(1)} => {m.group(2)} {m.group(3)}")
    return out


def module_version(go_mod: Path, module: str) -> str | None:
    """The version of ``module`` a go.mod file requires (None when it does not, or the file
    cannot be read)."""
    try:
        text = go_mod.read_text(encoding="utf-8")
    except OSError:
        return None
    m = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", text, re.M)
    return m.group(1) if m else None
