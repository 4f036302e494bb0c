"""The S3 server MatrixOne's LogSet stores its data in: MinIO, pulled or built from its module.

MinIO publishes no semantic versions, so the module proxy serves it only as pseudo-versions
of its main branch; the pinned one is the source-only snapshot the proxy names ``latest``
(its repository stopped publishing releases there). ``minio`` is built from that module
(static, ``CGO_ENABLED=0``) and ``mc`` at the version MinIO itself requires, both on the
same Debian minbase as the MatrixOne image (one shared layer), so that the in-cluster
manifest's shell and ``mc`` sidecar work as with upstream's image. Upstream's image (the
release the operator's e2e pins) is used instead when the engine has it or can pull it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mochaos.errors import InfraError
from mochaos.images.archive import ImageConfig, Layer, load_archive, tar_directory, write_archive
from mochaos.images.gomodule import GoToolchain, ModuleSource, module_source
from mochaos.images.matrixone import BASE
from mochaos.images.recipe import RECIPE_LABEL, Entry, Steps, fingerprint
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.runner import SubprocessRunner

UPSTREAM_IMAGE = "minio/minio:RELEASE.2023-11-01T01-57-10Z"
"""The release the operator's own e2e pins; its image ships the ``mc`` client."""
MODULE = "github.com/minio/minio"
MC_PACKAGE = "github.com/minio/mc"
VERSION = "v0.0.0-20260212201848-7aac2a2c5b7c"
REPOSITORY = "mochaos/minio"
REVISION = "minio-image-v1"
PORT = 9000
BUILD_TIMEOUT = 1800.0
STEPS = 6


def image_ref(version: str = VERSION) -> str:
    """Our MinIO image's reference (never pulled: it exists only where it was built)."""
    return f"{REPOSITORY}:{version}"


def build_env() -> dict[str, str]:
    """Static binaries from the read-only module, with the local toolchain."""
    return {"CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly", "GOTOOLCHAIN": "local", "GOWORK": "off"}


def ldflags(source: ModuleSource) -> str:
    """MinIO's version variables (its buildscripts/gen-ldflags.go), from the pseudo-version."""
    commit = source.version.rsplit("-", 1)[-1]
    return " ".join(
        [
            "-s",
            "-w",
            f"-X {MODULE}/cmd.Version={source.time}",
            f"-X {MODULE}/cmd.ReleaseTag=DEVELOPMENT.{source.time.replace(':', '-')}",
            f"-X {MODULE}/cmd.CommitID={commit}",
            f"-X {MODULE}/cmd.ShortCommitID={commit[:12]}",
        ]
    )


@dataclass(frozen=True, slots=True)
class MinioImage:
    """The recipe of our MinIO image, for one Go toolchain."""

    go: GoToolchain
    version: str = VERSION

    @property
    def ref(self) -> str:
        """The image reference."""
        return image_ref(self.version)

    def commands(self, source: ModuleSource, out: Path) -> list[list[str]]:
        """``minio`` (the module's main package) and ``mc`` (at the version it requires)."""
        env = build_env()
        flags = ["build", "-trimpath"]
        return [
            self.go.command(
                [*flags, "-ldflags", ldflags(source), "-o", str(out / "minio"), "."],
                cwd=source.directory,
                env=env,
            ),
            self.go.command(
                [*flags, "-ldflags", "-s -w", "-o", str(out / "mc"), MC_PACKAGE],
                cwd=source.directory,
                env=env,
            ),
        ]

    def config(self, key: str) -> ImageConfig:
        """``minio server /data`` by default, as upstream's image."""
        return ImageConfig(
            entrypoint=("/usr/bin/minio",),
            cmd=("server", "/data"),
            ports=(PORT,),
            labels={
                RECIPE_LABEL: key,
                "org.opencontainers.image.source": f"{MODULE}@{self.version}",
            },
        )

    def inputs(self) -> dict[str, Any]:
        """Everything that decides the image (the cache key)."""
        placeholder = ModuleSource(MODULE, self.version, Path("<src>"), "", "<time>")
        return {
            "revision": REVISION,
            "module": MODULE,
            "version": self.version,
            "go": self.go.version,
            "arch": self.go.arch,
            "base": BASE.inputs(),
            "commands": self.commands(placeholder, Path("<out>")),
            "config": self.config("<key>").as_json(),
        }

    def entry(self) -> Entry:
        """The cache entry of the archive."""
        return Entry("minio", self.version, fingerprint(self.inputs()))


def recipe() -> MinioImage:
    """The recipe with the ``go`` on PATH."""
    return MinioImage(GoToolchain.find(SubprocessRunner(progress=None)))


def build_archive(*, progress: Progress = say) -> Path:
    """Our MinIO image as a docker-loadable archive, built when not cached."""
    image = recipe()
    entry = image.entry()
    archive = entry.directory / "image.tar"
    if entry.complete():
        progress(f"{image.ref}: cached ({archive})")
        return archive
    with entry.building() as needed:
        if needed:
            _build(image, entry, archive, progress)
    return archive


def _build(image: MinioImage, entry: Entry, archive: Path, progress: Progress) -> None:
    title = f"building {image.ref}"
    progress(
        f"{title} from {MODULE}@{image.version} with {image.go.version} (log: {entry.log_path})"
    )
    work = entry.directory / "work"
    try:
        _steps(
            image,
            entry,
            archive,
            work,
            Steps(title, STEPS, progress=progress, log_path=entry.log_path),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    progress(f"{title}: done, {archive.stat().st_size / 2**20:.0f} MiB ({archive})")


def _steps(image: MinioImage, entry: Entry, archive: Path, work: Path, steps: Steps) -> None:
    runner = entry.runner()
    layer = work / "layer"
    binaries = layer / "usr" / "bin"
    with steps.step(f"source {MODULE}@{image.version}"):
        source = module_source(image.go, MODULE, image.version, runner=runner, env=build_env())
    with steps.step("dependencies (go mod download)"):
        runner(
            image.go.command(["mod", "download"], cwd=source.directory, env=build_env()),
            what="go mod download",
            timeout=BUILD_TIMEOUT,
        )
    binaries.mkdir(parents=True)
    build_minio, build_mc = image.commands(source, binaries)
    with steps.step("minio (go build)"):
        runner(build_minio, what=f"go build {MODULE}", timeout=BUILD_TIMEOUT)
        runner(build_mc, what=f"go build {MC_PACKAGE}", timeout=BUILD_TIMEOUT)
    base = BASE.layer(steps, needed_by=image.ref)
    with steps.step("MinIO layer (/usr/bin/minio, /usr/bin/mc, /data)"):
        (layer / "data").mkdir()
        own = tar_directory(layer, work / "layer.tar", runner=runner, root_owned=True)
    with steps.step(f"image archive {archive.name}"):
        write_archive(
            archive,
            ref=image.ref,
            architecture=image.go.arch,
            created=source.time,
            config=image.config(entry.key),
            layers=[
                Layer(base, f"debootstrap --variant=minbase {BASE.suite}"),
                Layer(own, f"minio and mc of {MODULE}@{image.version}"),
            ],
        )


def ensure_image(docker: DockerCli, *, progress: Progress = say, pull: bool = True) -> str:
    """A MinIO image in ``docker``'s engine: upstream's when the engine has it or can pull
    it, else ours (built when not cached, and loaded)."""
    if docker.image_labels(UPSTREAM_IMAGE) is not None:
        return UPSTREAM_IMAGE
    if pull:
        try:
            docker.pull(UPSTREAM_IMAGE)
        except InfraError as err:
            progress(f"{UPSTREAM_IMAGE}: not pulled ({err.what}); using MinIO built from source")
        else:
            return UPSTREAM_IMAGE
    image = recipe()
    labels = docker.image_labels(image.ref)
    if labels is not None and labels.get(RECIPE_LABEL) == image.entry().key:
        return image.ref
    load_archive(docker, build_archive(progress=progress), progress=progress)
    return image.ref
