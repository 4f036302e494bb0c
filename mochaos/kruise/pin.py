"""Which OpenKruise version an operator checkout runs with.

The operator's go.mod pins ``github.com/openkruise/kruise-api`` (the API types its
controllers use; kruise tags its API module with the manager's version), and its chart
depends on the kruise chart of the same version. Without a checkout (``binary:`` with a
bare CRD folder) the default is :data:`~mochaos.kruise.module.DEFAULT_VERSION`.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from mochaos.kruise.module import DEFAULT_VERSION
from mochaos.tooling.gomod import module_version

API_MODULE = "github.com/openkruise/kruise-api"
CHART = Path("charts") / "matrixone-operator" / "Chart.yaml"
_RELEASE = re.compile(r"^v\d+\.\d+\.\d+$")


def pinned_version(checkout: Path | None) -> str:
    """The kruise version ``checkout`` pins: its go.mod's kruise-api release, else its
    chart's kruise dependency, else :data:`DEFAULT_VERSION` (also for a pin that is not a
    release, e.g. a pseudo-version, which names no kruise-manager)."""
    if checkout is None:
        return DEFAULT_VERSION
    for found in (module_version(checkout / "go.mod", API_MODULE), _from_chart(checkout / CHART)):
        if found is not None and _RELEASE.match(found):
            return found
    return DEFAULT_VERSION


def _from_chart(path: Path) -> str | None:
    try:
        chart = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return None
    for dep in chart.get("dependencies") or []:
        if isinstance(dep, dict) and dep.get("name") == "kruise" and dep.get("version"):
            return "v" + str(dep["version"]).removeprefix("v")
    return None
