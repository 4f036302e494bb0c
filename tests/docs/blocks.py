"""The code blocks of docs/*.md that claim to run: a fenced block right after a
``<!-- runnable: <kind> [name] -->`` comment (indented blocks of a list item are dedented)."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARK = re.compile(r"^<!-- runnable: (?P<kind>[\w-]+)(?: (?P<name>[\w-]+))? -->$")
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>\w*)$")


@dataclass(frozen=True)
class Block:
    """One runnable block: where it is, what kind of run it claims, its code."""

    doc: str
    line: int
    kind: str
    name: str
    code: str

    @property
    def id(self) -> str:
        """``writing-scenarios.md:12`` (a test id)."""
        return f"{self.doc}:{self.line}"


def runnable_blocks(docs: Path = DOCS) -> list[Block]:
    """Every marked block of every page under ``docs``, in page order.

    ValueError when a mark is not followed by a fenced block, or the block never ends.
    """
    found = []
    for page in sorted(docs.rglob("*.md")):
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            mark = MARK.match(line.strip())
            if mark is None:
                continue
            where = f"{page.relative_to(docs)}:{i + 1}"
            fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
            if fence is None:
                raise ValueError(f"{where}: a runnable mark must be followed by a ``` block")
            closing = fence["indent"] + "```"
            end = next((j for j in range(i + 2, len(lines)) if lines[j] == closing), None)
            if end is None:
                raise ValueError(f"{where}: the block never ends")
            code = textwrap.dedent("\n".join(lines[i + 2 : end]) + "\n")
            found.append(Block(where.split(":")[0], i + 1, mark["kind"], mark["name"] or "", code))
    return found
