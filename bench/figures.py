"""What every benchmark shares: medians, a process's memory, a plain-text table, and the JSON
file of figures.

Figures go to ``<out>/<benchmark>-<run-id>.json`` (default ``reports/bench/``), so a
rerun never overwrites an earlier measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mochaos.errors import InfraError, MochaosError, UsageError
from mochaos.procs import rss_bytes
from mochaos.report.rundir import new_run_id

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "reports" / "bench"


class Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (one line, exit 2) instead of printing its usage."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message, hint=f"see `{self.prog} --help`")


def rss_mib(pid: int) -> float:
    """Resident set size of a running process in MiB (InfraError when it has none)."""
    rss = rss_bytes(pid)
    if rss is None:
        raise InfraError(f"no VmRSS for pid {pid}", hint="is it running?")
    return rss / 2**20


def median(values: Sequence[float]) -> float | None:
    """The median, or None for no values."""
    return statistics.median(values) if values else None


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, or None when either is missing or the denominator is 0."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def fmt(value: float | None, unit: str = "", digits: int = 2) -> str:
    """A number for a table cell; an en dash when missing."""
    return "–" if value is None else f"{value:.{digits}f}{unit}"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces."""
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]
    return "\n".join(lines)


def machine() -> dict[str, Any]:
    """What the figures depend on besides the code: cores and load when measured."""
    return {"cpus": os.cpu_count(), "loadavg": [round(x, 2) for x in os.getloadavg()]}


def write_figures(
    name: str, figures: dict[str, Any], *, out: Path, run_id: str | None = None
) -> Path:
    """Write ``figures`` as ``<out>/<name>-<run-id>.json`` (a new run id by default)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-{run_id or new_run_id()}.json"
    path.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return path


def run(main: Callable[[Sequence[str] | None], int]) -> None:
    """Exit with ``main()``'s status; a mo-chaos error becomes one line and its exit status."""
    try:
        code = main(None)
    except MochaosError as err:
        print(f"bench: {err}", file=sys.stderr)
        code = err.exit_code
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        code = 130
    sys.exit(code)
