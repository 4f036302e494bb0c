"""The operator's Helm chart taken from a checkout, with its dependencies from the same checkout.

``charts/matrixone-operator`` names its OpenKruise dependency in a chart repository
(unreachable offline); the same checkout carries that chart in ``charts/kruise``.
Copying it into the operator chart's ``charts/`` folder, which is where Helm looks
for dependencies first, makes the chart installable without any repository.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from filelock import FileLock

from mochaos.errors import UsageError
from mochaos.operator.provenance.checkout import Checkout
from mochaos.paths import cache_dir

CHART_DIR = Path("charts") / "matrixone-operator"


def _chart_version(chart: Path) -> str:
    return str(yaml.safe_load((chart / "Chart.yaml").read_text()).get("version", ""))


def checkout_chart(checkout: Checkout) -> Path:
    """The checkout's operator chart with every dependency vendored; cached by checkout key."""
    source = checkout.path / CHART_DIR
    if not (source / "Chart.yaml").is_file():
        raise UsageError(
            f"{checkout.path} has no {CHART_DIR}/Chart.yaml",
            hint="point source: at a matrixone-operator checkout that ships its chart",
        )
    dest = cache_dir() / "operator" / "charts" / checkout.key / "matrixone-operator"
    dest.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(dest) + ".lock", timeout=600):
        if (dest / ".complete").is_file():
            return dest
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(source, dest)
        meta = yaml.safe_load((source / "Chart.yaml").read_text())
        for dep in meta.get("dependencies") or []:
            name, version = str(dep["name"]), str(dep.get("version", ""))
            sub = checkout.path / "charts" / name
            if not (sub / "Chart.yaml").is_file() or _chart_version(sub) != version:
                raise UsageError(
                    f"{checkout.describe}: chart dependency {name} {version} is not in "
                    f"charts/{name} of the checkout",
                    hint="use a checkout that carries its dependency charts, or "
                    "--mochaos-chart-path with a chart whose charts/ folder holds them",
                )
            shutil.copytree(sub, dest / "charts" / name)
        (dest / ".complete").write_text(checkout.commit + "\n")
    return dest
