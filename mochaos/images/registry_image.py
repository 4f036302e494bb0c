"""The OCI registry's image: CNCF Distribution's ``registry``, built from its Go module.

One layer on nothing: the static ``registry`` program (``CGO_ENABLED=0``, built and cached
like kind and helm, :mod:`mochaos.images.go_tools`), its configuration (plain HTTP on
:data:`PORT`, blobs on the container's file system) and an empty ``/tmp``. mo-chaos runs it
on kind's Docker network (:mod:`mochaos.cluster.kind.image_registry`); it is never pulled, so it
exists only in the engine it was built for.
"""

from __future__ import annotations

import platform
import shutil
from pathlib import Path

from mochaos.binaries.download import ARCHES
from mochaos.images.archive import ImageConfig, Layer, load_archive, tar_directory, write_archive
from mochaos.images.go_tools import tool
from mochaos.images.recipe import RECIPE_LABEL
from mochaos.paths import cache_dir
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.runner import SubprocessRunner

VERSION = "v3.1.2"
"""Distribution's newest v3 release the module proxy served (2026-12)."""
MODULE = "github.com/distribution/distribution/v3"
REPOSITORY = "mochaos/registry"
REVISION = "registry-image-v1"
"""Changes whenever the image's layout or configuration below changes (its recipe label)."""
PORT = 5000
CONFIG_PATH = "/etc/distribution/config.yml"
CONFIG = f"""version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: /var/lib/registry
  delete:
    enabled: true
http:
  addr: :{PORT}
"""
CREATED = "2026-12-01T00:00:00Z"
"""The image's creation time: fixed, so that the same inputs give the same image id."""


def image_ref() -> str:
    """Our registry image's reference."""
    return f"{REPOSITORY}:{VERSION}"


def config() -> ImageConfig:
    """``registry serve`` with the configuration baked into the image."""
    return ImageConfig(
        entrypoint=("/usr/bin/registry",),
        cmd=("serve", CONFIG_PATH),
        ports=(PORT,),
        labels={RECIPE_LABEL: REVISION, "org.opencontainers.image.source": f"{MODULE}@{VERSION}"},
    )


def build_archive(*, progress: Progress = say) -> Path:
    """The image as a ``docker load`` archive in the cache (the program built when missing)."""
    folder = cache_dir() / "images" / "registry" / f"{VERSION}-{REVISION}"
    archive = folder / "image.tar"
    if archive.is_file():
        return archive
    binary = tool("registry", VERSION, progress=progress)
    work = folder / "work"
    shutil.rmtree(work, ignore_errors=True)
    root = work / "root"
    try:
        (root / "usr" / "bin").mkdir(parents=True)
        shutil.copy2(binary, root / "usr" / "bin" / "registry")
        (root / "etc" / "distribution").mkdir(parents=True)
        (root / CONFIG_PATH.lstrip("/")).write_text(CONFIG)
        (root / "var" / "lib" / "registry").mkdir(parents=True)
        (root / "tmp").mkdir(mode=0o1777)
        runner = SubprocessRunner(log_path=folder / "build.log")
        layer = tar_directory(root, work / "layer.tar", runner=runner, root_owned=True)
        write_archive(
            archive,
            ref=image_ref(),
            layers=[Layer(layer, f"registry of {MODULE}@{VERSION} and its configuration")],
            config=config(),
            architecture=ARCHES.get(platform.machine().lower(), platform.machine()),
            created=CREATED,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return archive


def ensure_image(docker: DockerCli, *, progress: Progress = say) -> str:
    """Our registry image in ``docker``'s engine (built and loaded when missing or stale)."""
    ref = image_ref()
    labels = docker.image_labels(ref)
    if labels is None or labels.get(RECIPE_LABEL) != REVISION:
        progress(f"{ref}: building from {MODULE}@{VERSION}")
        load_archive(docker, build_archive(progress=progress), progress=progress)
    return ref
