"""Operator targets: what ``--operator`` names and how each is installed and started.

``model:<profile>`` runs the reference model as a process per test namespace;
``binary:<path>`` runs a real operator binary; ``image:<ref>`` installs the
real image with its Helm chart (kind / existing clusters); ``installed`` uses
an operator already running in the cluster. Suites reach operators only
through these targets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mochaos.errors import UsageError
from mochaos.operator.crd_source import DEFAULT_OPERATOR_VERSION
from mochaos.operator.crd_source import crds as _crds
from mochaos.types import OperatorTarget

SCHEMES = ("model", "binary", "image", "installed")


def crds(version: str = DEFAULT_OPERATOR_VERSION) -> list[dict[str, Any]]:
    """The CNClaim, CNClaimSet and CNPool CRDs shared by the model and the kind path."""
    return _crds(version)[1]


def crd_source(version: str = DEFAULT_OPERATOR_VERSION) -> str:
    """Where :func:`crds` came from: ``module:<version>`` or ``own``."""
    return _crds(version)[0]


def parse_target(
    spec: str, *, time_scale: float = 1.0, image_options: dict[str, Any] | None = None
) -> OperatorTarget:
    """Turn an ``--operator`` value into a target; UsageError for anything unknown.

    ``image_options`` (mo_image, mo_version, minio, chart_repo, chart_version, chart_path, run_id)
    configure ``image:`` and ``installed`` targets; unset values keep their defaults.
    """
    scheme, _, rest = spec.partition(":")
    if scheme == "model":
        from mochaos.operator.model_target import ModelTarget

        return ModelTarget(profile=rest, time_scale=time_scale)
    if scheme == "binary":
        from mochaos.operator.binary_target import BinaryTarget

        if not rest:
            raise UsageError("binary: target needs a path", hint="use --operator=binary:/path")
        return BinaryTarget(path=Path(rest))
    if scheme == "image":
        from mochaos.operator.chart_target import ImageTarget

        if not rest:
            raise UsageError("image: target needs a reference", hint="use image:<repo>:<tag>")
        return ImageTarget(ref=rest, **_image_kwargs(image_options or {}, chart=True))
    if scheme == "installed" and not rest:
        from mochaos.operator.installed_target import InstalledTarget

        return InstalledTarget(**_image_kwargs(image_options or {}, chart=False))
    raise UsageError(
        f"unknown operator target {spec!r}",
        hint="use model:<profile>, binary:<path>, image:<ref> or installed",
    )


def _image_kwargs(options: dict[str, Any], *, chart: bool) -> dict[str, Any]:
    """Keyword arguments for the image targets from the plugin's options (unset: default)."""
    from mochaos.operator.helm import ChartOptions

    kwargs: dict[str, Any] = {
        k: options[k]
        for k in ("mo_image", "mo_version", "minio", "run_id")
        if options.get(k) is not None
    }
    if chart:
        fields = {"repo_url": "chart_repo", "version": "chart_version", "chart_path": "chart_path"}
        chosen = {f: options[o] for f, o in fields.items() if options.get(o) is not None}
        if chosen:
            kwargs["chart"] = ChartOptions(**chosen)
    return kwargs
