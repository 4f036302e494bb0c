"""Getting an image onto kind's nodes, the way the engine's image store allows.

``kind load docker-image`` exports the image with ``docker save`` and imports
it in each node with ``ctr images import --all-platforms``. On Docker's
containerd image store (the default of new Docker installs) the export of a
multi-platform image (the operator's is amd64+arm64) names every platform
but holds only the pulled one, so the import fails with "content digest …
not found" (kubernetes-sigs/kind#3795, documented in kind's known issues).
So: on the classic store, ``kind load docker-image``; on the containerd store,
``docker image save --platform <node platform>`` (Docker API >= 1.48) and
``kind load image-archive``; when that export is not possible, the image is
not loaded and the nodes pull it themselves (the charts and manifests use
``imagePullPolicy: IfNotPresent``), and a progress line says which and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mochaos.cluster.kind.docker_engine import EngineInfo
from mochaos.tooling.progress_callback import Progress
from mochaos.tooling.runner import Runner, reason

LoadMethod = Literal["docker-image", "image-archive"]

LOAD_TIMEOUT = 900.0


@dataclass(frozen=True, slots=True)
class LoadPlan:
    """How one image reaches the nodes, and why that way."""

    method: LoadMethod
    why: str


def plan_load(info: EngineInfo) -> LoadPlan:
    """The load method the engine's image store allows."""
    if info.containerd_store:
        return LoadPlan(
            "image-archive",
            f"containerd image store: a single-platform {info.platform} archive, since "
            "`kind load docker-image` fails on multi-platform images there",
        )
    return LoadPlan("docker-image", f"{info.image_store} image store")


def archive_path(directory: Path, ref: str) -> Path:
    """Where the single-platform archive of ``ref`` is written."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in ref)
    return directory / f"{safe}.tar"


def save_single_platform(
    ref: str, *, docker: str, platform: str, archive: Path, runner: Runner
) -> str:
    """``docker image save --platform`` of ``ref`` into ``archive``: '' or why it failed."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    saved = runner(
        [docker, "image", "save", "--platform", platform, "--output", str(archive), ref],
        what=f"docker image save --platform {platform} {ref}",
        timeout=LOAD_TIMEOUT,
        check=False,
    )
    return "" if saved.returncode == 0 else reason(saved)


def load_image(
    ref: str,
    *,
    kind: str,
    docker: str,
    cluster: str,
    info: EngineInfo,
    runner: Runner,
    archive_dir: Path,
    progress: Progress,
) -> str:
    """Load ``ref`` (already in the engine) onto the nodes of ``cluster``; how it went, in words.

    Returns ``"loaded (<why>)"`` or ``"left to the nodes to pull (<why>)"``;
    InfraError names the method and the reason when a load itself fails.
    """
    plan = plan_load(info)
    archive = archive_path(archive_dir, ref)
    if plan.method == "docker-image":
        argv = [kind, "load", "docker-image", "--name", cluster, ref]
    else:
        failed = save_single_platform(
            ref, docker=docker, platform=info.platform, archive=archive, runner=runner
        )
        if failed:
            why = (
                f"{info.image_store} image store and `docker image save --platform` failed: "
                f"{failed}"
            )
            progress(f"not loading {ref} into kind: {why}; the nodes will pull it")
            return f"left to the nodes to pull ({why})"
        argv = [kind, "load", "image-archive", "--name", cluster, str(archive)]
    try:
        runner(
            argv,
            what=f"kind load {plan.method} {ref} ({plan.why})",
            hint=f"check that `docker image inspect {ref}` works and the cluster is up",
            timeout=LOAD_TIMEOUT,
        )
    finally:
        archive.unlink(missing_ok=True)
    return f"loaded ({plan.why})"
