"""``matrixorigin/matrixone:<version>``: pulled when a registry gives it, else built from source.

The build takes that version's Go module (github.com/matrixorigin/matrixone@v<version>)
from the module proxy at build time, never from our repository: MatrixOne's C helpers
(``make -C cgo`` -> libmo.a, its only C part in 1.x), then ``go build ./cmd/mo-service``
with the version ldflags its Makefile sets (its ``make build`` is not used: it runs ``go
mod tidy`` and ``git describe``, which need a git clone). The image is upstream's layout
(optools/images/Dockerfile: ``/mo-service``, the source's ``etc/`` under ``/etc``, the
same entrypoint) on a Debian bookworm minbase instead of Ubuntu, with what the operator's
start scripts use — a POSIX shell with coreutils, sed and awk, ``nslookup``
(bind9-dnsutils) — plus ca-certificates and curl. glibc >= 2.34 is all mo-service needs.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mochaos.doubles.matrixone.build import build_env as nosumdb_env
from mochaos.errors import InfraError, UsageError
from mochaos.images.archive import ImageConfig, Layer, load_archive, tar_directory, write_archive
from mochaos.images.debian import DebianBase
from mochaos.images.gomodule import GoToolchain, ModuleSource, module_source
from mochaos.images.recipe import RECIPE_LABEL, Entry, Steps, fingerprint
from mochaos.tooling.docker_cli import DockerCli
from mochaos.tooling.progress_callback import Progress, say
from mochaos.tooling.runner import Runner, SubprocessRunner

MODULE = "github.com/matrixorigin/matrixone"
REPOSITORY = "matrixorigin/matrixone"
DEFAULT_VERSION = "1.2.3"
"""The operator's own default and CI version (its Makefile's ``MO_VERSION``)."""
REVISION = "mo-image-v1"
BASE = DebianBase("bookworm", ("bind9-dnsutils", "ca-certificates", "curl"))
ENTRYPOINT = ("/mo-service", "-debug-http=:12345", "-launch", "/etc/quickstart/launch.toml")
"""Upstream's entrypoint: all of MatrixOne in one process (the operator's pods override it)."""
SQL_PORT = 6001
BUILD_TIMEOUT = 3600.0
"""``go build ./cmd/mo-service`` with an empty build cache on one busy core."""
STEPS = 7

_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def image_ref(version: str = DEFAULT_VERSION) -> str:
    """The reference the operator's objects name: ``matrixorigin/matrixone:<version>``."""
    return f"{REPOSITORY}:{version}"


def refusal(version: str) -> str | None:
    """Why this recipe cannot build ``version`` (None when it can try).

    It builds MatrixOne 1.x releases. From 2.0 on the tags are not Go module versions
    (the module path has no ``/v2``, so the proxy cannot serve ``v2.x.y``) and their
    source needs C/C++ libraries in ``thirdparties/`` built with cmake, which the image
    would need too.
    """
    m = _RELEASE.fullmatch(version)
    if m is None:
        return (
            f"{version!r} is not a MatrixOne release (x.y.z); the recipe builds release "
            f"tags of {MODULE}"
        )
    if int(m[1]) >= 2:
        return (
            f"MatrixOne {version} is not a Go module version ({MODULE} has no /v2 path) "
            "and needs the C/C++ libraries of its thirdparties/ (cmake); the recipe "
            "builds 1.x"
        )
    return None


def source_refusal(source: ModuleSource) -> str | None:
    """Why the fetched source cannot be built this way (None when it can)."""
    tree = source.directory
    if (tree / "thirdparties").exists():
        return f"{source.module}@{source.version} needs the C/C++ libraries of thirdparties/"
    for needed in ("cgo/Makefile", "cmd/mo-service", "etc/quickstart/launch.toml"):
        if not (tree / needed).exists():
            return f"{source.module}@{source.version} has no {needed}"
    return None


def build_env(work: Path) -> dict[str, str]:
    """The environment of the Go commands: cgo against our libmo.a, the module read-only,
    the local toolchain, MatrixOne's forks outside the checksum database."""
    cgo = work / "cgo"
    return {
        "CGO_ENABLED": "1",
        "CGO_CFLAGS": f"-I{cgo}",
        "CGO_LDFLAGS": f"-L{cgo} -lm -lmo",
        "GOFLAGS": "-mod=readonly",
        "GOTOOLCHAIN": "local",
        "GOWORK": "off",
        **nosumdb_env(),
    }


def ldflags(go: GoToolchain, source: ModuleSource) -> str:
    """The ``-X`` flags of MatrixOne's Makefile (``GOLDFLAGS``), from the module's origin."""
    tag = source.version
    values = {
        "GoVersion": f"go version {go.version} linux/{go.arch}",
        "BranchName": tag,
        "CommitID": source.commit[:7],
        "BuildTime": source.time,
        "Version": tag,
    }
    return " ".join(f"-X '{MODULE}/pkg/version.{k}={v}'" for k, v in values.items())


@dataclass(frozen=True, slots=True)
class MatrixOneImage:
    """The recipe of one MatrixOne version's image, for one Go toolchain."""

    version: str
    go: GoToolchain

    @property
    def ref(self) -> str:
        """The image reference."""
        return image_ref(self.version)

    @property
    def module_version(self) -> str:
        """The module version of the release tag."""
        return f"v{self.version}"

    def commands(self, source: ModuleSource, work: Path, out: Path) -> list[list[str]]:
        """libmo.a, then mo-service: the two build commands, in order."""
        env = build_env(work)
        build = self.go.command(
            [
                "build",
                "-trimpath",
                "-ldflags",
                ldflags(self.go, source),
                "-o",
                str(out),
                "./cmd/mo-service",
            ],
            cwd=source.directory,
            env=env,
        )
        return [["make", "-C", str(work / "cgo")], build]

    def config(self, key: str) -> ImageConfig:
        """Upstream's entrypoint and port, and labels naming the source and our recipe."""
        return ImageConfig(
            entrypoint=ENTRYPOINT,
            ports=(SQL_PORT,),
            labels={
                RECIPE_LABEL: key,
                "org.opencontainers.image.version": self.version,
                "org.opencontainers.image.source": f"{MODULE}@{self.module_version}",
            },
        )

    def inputs(self) -> dict[str, Any]:
        """Everything that decides the image (the cache key): the commands as they would
        run, with placeholders for paths and for what the module's origin fills in."""
        placeholder = ModuleSource(MODULE, self.module_version, Path("<src>"), "<commit>", "<time>")
        return {
            "revision": REVISION,
            "module": MODULE,
            "version": self.version,
            "go": self.go.version,
            "arch": self.go.arch,
            "base": BASE.inputs(),
            "commands": self.commands(placeholder, Path("<work>"), Path("<out>")),
            "config": self.config("<key>").as_json(),
        }

    def entry(self) -> Entry:
        """The cache entry of the archive."""
        return Entry("matrixone", self.version, fingerprint(self.inputs()))


def recipe(version: str = DEFAULT_VERSION, *, runner: Runner | None = None) -> MatrixOneImage:
    """The recipe for ``version`` with the ``go`` on PATH."""
    return MatrixOneImage(version, GoToolchain.find(runner or SubprocessRunner(progress=None)))


def build_archive(version: str = DEFAULT_VERSION, *, progress: Progress = say) -> Path:
    """The image as a docker-loadable archive, built when not cached; UsageError when this
    recipe cannot build ``version``, BuildError (one line) when a step fails."""
    why = refusal(version)
    if why:
        raise UsageError(
            f"cannot build {image_ref(version)}: {why}",
            hint="use a 1.x release, or load that image into Docker yourself",
        )
    image = recipe(version)
    entry = image.entry()
    archive = entry.directory / "image.tar"
    if entry.complete():
        progress(f"{image.ref}: cached ({archive})")
        return archive
    with entry.building() as needed:
        if needed:
            _build(image, entry, archive, progress)
    return archive


def _build(image: MatrixOneImage, entry: Entry, archive: Path, progress: Progress) -> None:
    title = f"building {image.ref}"
    progress(
        f"{title} from {MODULE}@{image.module_version} with {image.go.version} "
        f"(log: {entry.log_path})"
    )
    # One work folder per version, whatever the key: the cgo flags name it, and Go's build
    # cache keys cgo packages by their flags, so a new key still finds them compiled.
    work = entry.directory.parent / "build" / f"matrixone-{image.version}"
    shutil.rmtree(work, ignore_errors=True)
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


def _steps(image: MatrixOneImage, entry: Entry, archive: Path, work: Path, steps: Steps) -> None:
    runner = entry.runner()
    binary = work / "mo-service"
    with steps.step(f"source {MODULE}@{image.module_version}"):
        source = module_source(
            image.go, MODULE, image.module_version, runner=runner, env=nosumdb_env()
        )
        why = source_refusal(source)
        if why:
            raise UsageError(f"cannot build {image.ref}: {why}", hint="use a 1.x release")
    with steps.step("dependencies (go mod download)"):
        runner(
            image.go.command(["mod", "download"], cwd=source.directory, env=build_env(work)),
            what="go mod download",
            timeout=BUILD_TIMEOUT,
        )
    make, build = image.commands(source, work, binary)
    with steps.step("libmo.a (make -C cgo)"):
        _writable_copy(source.directory / "cgo", work / "cgo")
        runner(make, what="make -C cgo")
    with steps.step("mo-service (go build ./cmd/mo-service)"):
        runner(build, what="go build ./cmd/mo-service", timeout=BUILD_TIMEOUT)
    base = BASE.layer(steps, needed_by=image.ref)
    with steps.step("MatrixOne layer (/mo-service, /etc)"):
        layer = work / "layer"
        _writable_copy(source.directory / "etc", layer / "etc")
        shutil.copy2(binary, layer / "mo-service")
        own = tar_directory(layer, work / "layer.tar", runner=runner, root_owned=True)
    with steps.step(f"image archive {archive.name}"):
        packages = " ".join(BASE.packages)
        write_archive(
            archive,
            ref=image.ref,
            architecture=image.go.arch,
            created=source.time,
            config=image.config(entry.key),
            layers=[
                Layer(base, f"debootstrap --variant=minbase {BASE.suite} + {packages}"),
                Layer(own, f"mo-service and etc/ of {MODULE}@{image.module_version}"),
            ],
        )


def _writable_copy(src: Path, dst: Path) -> None:
    """Copy a tree out of Go's read-only module cache, owner-writable."""
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):
        for name in dirs:
            os.chmod(Path(root) / name, 0o755)
        for name in files:
            path = Path(root) / name
            os.chmod(path, 0o755 if os.access(path, os.X_OK) else 0o644)
    os.chmod(dst, 0o755)


def ensure_image(
    version: str = DEFAULT_VERSION,
    docker: DockerCli | None = None,
    *,
    progress: Progress = say,
    pull: bool = True,
) -> str:
    """``matrixorigin/matrixone:<version>`` in ``docker``'s engine; its reference.

    Kept when the engine has it (pulled earlier, loaded by the user, or built by the
    current recipe); else pulled (with ``pull``); else built from source (cached) and
    loaded. An image built by an older recipe is replaced.
    """
    docker = docker or DockerCli.find()
    ref = image_ref(version)
    labels = docker.image_labels(ref)
    if labels is not None:
        built_by = labels.get(RECIPE_LABEL)
        if built_by is None:
            progress(f"{ref}: in the Docker engine (not built by mo-chaos), used as it is")
            return ref
        if refusal(version) is None and built_by == recipe(version).entry().key:
            progress(f"{ref}: in the Docker engine, built by the current recipe")
            return ref
        progress(f"{ref}: the engine's was built by another recipe ({built_by}); rebuilding")
    elif pull:
        try:
            docker.pull(ref)
        except InfraError as err:
            progress(f"{ref}: not pulled ({err.what}); building it from source")
        else:
            return ref
    load_archive(docker, build_archive(version, progress=progress), progress=progress)
    return ref
