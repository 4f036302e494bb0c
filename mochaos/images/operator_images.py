"""The controllers' images, packaged from binaries built here: the operator and OpenKruise.

Both projects ship a static manager on a distroless base as ``/manager`` (the
command their charts run); these images hold the same binary at the same path
on a small base layer (users, ``/tmp``, CA certificates), run as the distroless
``nonroot`` user (65532), and are loaded into the engine with ``docker load``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from filelock import FileLock

from mochaos.errors import BuildError
from mochaos.images.archive import ImageConfig, Layer, tar_directory, write_archive
from mochaos.images.preloaded import EPOCH
from mochaos.kruise.kruise_build import kruise_manager
from mochaos.paths import cache_dir
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.progress_callback import Progress

NONROOT = "65532:65532"
OPERATOR_REPOSITORY = "mochaos.local/matrixone-operator"
KRUISE_REPOSITORY = "openkruise/kruise-manager"
BASE_FILES = {
    "etc/passwd": "root:x:0:0:root:/root:/sbin/nologin\n"
    "nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
    "etc/group": "root:x:0:\nnonroot:x:65532:\n",
    "etc/nsswitch.conf": "hosts: files dns\n",
}
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


def _base_stage(stage: Path) -> None:
    for rel, text in BASE_FILES.items():
        path = stage / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for rel in ("tmp", "home/nonroot"):
        (stage / rel).mkdir(parents=True, exist_ok=True)
    (stage / "tmp").chmod(0o1777)
    if CA_BUNDLE.is_file():
        dest = stage / CA_BUNDLE.relative_to("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CA_BUNDLE, dest)


def manager_image(
    binary: Path, *, ref: str, docker: DockerCli, progress: Progress, architecture: str = "amd64"
) -> str:
    """``binary`` as ``/manager`` in image ``ref``, loaded into the engine; ``ref``."""
    work = cache_dir() / "build" / "images" / ref.replace("/", "_").replace(":", "_")
    work.mkdir(parents=True, exist_ok=True)
    with FileLock(str(work) + ".lock", timeout=1800):
        if docker.image_id(ref):
            return ref
        progress(f"packaging {binary} as {ref}")
        stage = work / "stage"
        shutil.rmtree(stage, ignore_errors=True)
        _base_stage(stage)
        shutil.copy2(binary, stage / "manager")
        (stage / "manager").chmod(0o755)
        layer = work / "layer.tar"
        tar_directory(stage, layer, runner=docker.runner, root_owned=True)
        archive = work / "image.tar"
        config = ImageConfig(entrypoint=("/manager",), user=NONROOT)
        write_archive(archive, ref=ref, layers=[Layer(layer, f"mochaos: {binary.name}")],
                      config=config, architecture=architecture, created=EPOCH)  # fmt: skip
        docker.load(archive)
        for path in (archive, layer):
            path.unlink(missing_ok=True)
        shutil.rmtree(stage, ignore_errors=True)
    progress(f"{ref} loaded into the Docker engine")
    return ref


def kruise_image(version: str, *, docker: DockerCli, progress: Progress) -> str:
    """``openkruise/kruise-manager:<version>``: the binary the local cluster runs, from
    the same recipe (:func:`mochaos.kruise.kruise_build.kruise_manager`)."""
    binary = kruise_manager(version, progress=progress)
    if not binary.is_file():
        raise BuildError(f"kruise-manager {version} was not built", hint="see the build log")
    return manager_image(
        binary, ref=f"{KRUISE_REPOSITORY}:{version}", docker=docker, progress=progress
    )


def operator_ref(key: str) -> str:
    """The reference of the operator image built from a checkout with that key."""
    return f"{OPERATOR_REPOSITORY}:{key}"
