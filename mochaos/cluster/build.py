"""Build the local cluster's binaries from Go modules and cache them by version.

:func:`build` puts the control plane into the cache (:data:`COMPONENTS`): it first tries
the official release binaries (:mod:`mochaos.cluster.download`, ``MOCHAOS_BINARIES``) and
builds what they do not provide. What only some operator targets need is built when a
target asks for it: kruise-manager (:func:`kruise_manager`) and the MatrixOne double
(:func:`matrixone_double`).

k8s.io/kubernetes cannot be ``go install``-ed (its go.mod replaces every
staging module with a local path), so it is built inside a generated wrapper
module whose replace block maps each staging module to its published v0.x
twin, read from the release's own go.mod. etcd gets its own wrapper for the
same reason, and so does OpenKruise (:mod:`mochaos.kruise.module`); kwok and kwokctl
install directly. kwok's default Stages are read from its module (``kwok-stages``,
:mod:`mochaos.cluster.kwok_stages`). Go's module and build caches stay in their default
places, so a warm machine relinks in seconds.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock

from mochaos.cluster import download, kwok_stages
from mochaos.doubles.matrixone import build as matrixone_double_module
from mochaos.errors import BuildError, UsageError
from mochaos.kruise import module as kruise_module
from mochaos.paths import cache_dir
from mochaos.progress import announce

KUBERNETES_VERSION = "v1.36.3"
ETCD_VERSION = "v3.6.16"
KWOK_VERSION = "v0.8.0"

K8S_BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
BUILD_LANES = 1
"""Components built at once by default. With 2, kubernetes (most of a cold build) gets a
lane of its own and etcd, kwok and kwok's stages are built one after the other
beside it, in the cores the kubernetes build leaves idle (module resolution, its last
packages, the links); not the default until bench/fresh_machine.py --lanes 1,2 shows it
pays on 2 cores (not measured yet: docs/speed.md)."""

Progress = Callable[[str], None]


def _stderr_progress(line: str) -> None:
    announce(line)


@dataclass(frozen=True)
class Component:
    """One cached group of binaries (and other files) built by one recipe."""

    name: str
    version: str
    binaries: tuple[str, ...]
    recipe: str
    files: tuple[str, ...] = ()
    """Other outputs in the same folder (manifests read from the module), checked like the
    binaries."""

    @property
    def directory(self) -> Path:
        """Where this component's binaries are cached."""
        return cache_dir() / "bin" / f"{self.name}-{self.version}"

    def path(self, binary: str) -> Path:
        """Path of one cached binary."""
        return self.directory / binary

    @property
    def stamp(self) -> Path:
        """Written last: its presence means every binary is complete."""
        return self.directory / ".complete"

    def is_built(self) -> bool:
        """True when every binary exists and the stamp matches how they were obtained."""
        return self.obtained_by() is not None

    def obtained_by(self) -> str | None:
        """The recipe of the cached binaries (this build's or a download's), None when stale."""
        outputs = (*self.binaries, *self.files)
        if not self.stamp.is_file() or not all(self.path(b).is_file() for b in outputs):
            return None
        stamped = self.stamp.read_text().split()[:1]
        if stamped == [download.fingerprint(self)]:
            return download.RECIPE
        return self.recipe if stamped == [self.fingerprint()] else None

    def fingerprint(self) -> str:
        """Identifies the inputs: component, version, recipe revision, Go version."""
        raw = f"{self.name}@{self.version}/{self.recipe}/{_go_version()}"
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


COMPONENTS = (
    Component("kubernetes", KUBERNETES_VERSION, K8S_BINARIES, "wrapper-v1"),
    Component("etcd", ETCD_VERSION, ("etcd",), "wrapper-v1"),
    Component("kwok", KWOK_VERSION, ("kwok", "kwokctl"), "install-v1"),
    Component(
        "kwok-stages",
        KWOK_VERSION,
        (),
        kwok_stages.RECIPE,
        files=(kwok_stages.DEFAULTS_FILE, kwok_stages.STORAGE_CLASS_FILE),
    ),
)
"""The control plane: what every local cluster runs (:func:`build`)."""


def component(name: str) -> Component:
    """The control-plane component of that name (kubernetes, etcd, kwok, kwok-stages)."""
    for c in COMPONENTS:
        if c.name == name:
            return c
    raise KeyError(name)


def matrixone_double_component(version: str | None = None) -> Component:
    """The MatrixOne double built against MatrixOne ``version`` (default: the pinned one)."""
    return Component(
        "matrixone-double",
        version or matrixone_double_module.pinned_version(),
        (matrixone_double_module.BINARY,),
        matrixone_double_module.recipe(),
    )


def kruise_component(version: str | None = None) -> Component:
    """kruise-manager of OpenKruise ``version`` (default: what the operator's main branch
    pins), with the CRDs and webhook configurations of the same module."""
    return Component(
        "kruise",
        version or kruise_module.DEFAULT_VERSION,
        (kruise_module.BINARY,),
        kruise_module.RECIPE,
        files=(kruise_module.CRDS_FILE, kruise_module.WEBHOOKS_FILE),
    )


def binary_paths() -> dict[str, Path]:
    """Every cached binary by name (whether built or not)."""
    return {b: c.path(b) for c in COMPONENTS for b in c.binaries}


def all_built() -> bool:
    """True when the whole toolchain is in the cache."""
    return all(c.is_built() for c in COMPONENTS)


_GO_VERSION: str | None = None


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError("go not found", hint="install Go >= 1.26 and put it on PATH")
    return go


def _go_version() -> str:
    global _GO_VERSION
    if _GO_VERSION is None:
        out = subprocess.run([_go(), "env", "GOVERSION"], capture_output=True, text=True)
        _GO_VERSION = out.stdout.strip() or "unknown"
    return _GO_VERSION


def _build_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"GOTOOLCHAIN": "local", "GOWORK": "off", "CGO_ENABLED": "0", "GOFLAGS": "-mod=mod"})
    return env


@dataclass
class _Runner:
    """Runs go commands into one build log, with a heartbeat on long steps."""

    log_path: Path
    progress: Progress
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        shown = self.progress

        def both(line: str) -> None:
            # Every progress line also goes to the build log, timestamped, for bench/.
            shown(line)
            with self.log_path.open("a", encoding="utf-8") as log:
                log.write(f"[{datetime.now(UTC):%Y-%m-%dT%H:%M:%S.%fZ}] {line}\n")

        self.progress = both

    def run(
        self,
        args: list[str],
        *,
        cwd: Path,
        label: str,
        module: str,
        outputs: dict[str, Path] | None = None,
        env: dict[str, str] | None = None,
    ) -> str:
        """Run one command; raise BuildError with a one-line reason on failure.

        ``outputs`` names binaries the command writes: each is announced (with the
        elapsed time) as soon as its file appears, so one ``go build`` of several
        commands still shows progress per binary.
        """
        t0 = time.monotonic()
        lines = 0
        done = threading.Event()
        pending = dict(outputs or {})
        total = len(pending)

        def heartbeat() -> None:
            last_beat = time.monotonic()
            while not done.wait(1):
                for name, path in list(pending.items()):
                    if path.exists():
                        del pending[name]
                        n = total - len(pending)
                        elapsed = _fmt(time.monotonic() - t0)
                        self.progress(f"  [{n}/{total}] {name} built in {elapsed}")
                if time.monotonic() - last_beat >= 30:
                    last_beat = time.monotonic()
                    self.progress(f"  … {label}: {_fmt(time.monotonic() - t0)}, {lines} packages")

        beat = threading.Thread(target=heartbeat, daemon=True)
        beat.start()
        out_lines: list[str] = []
        with self.log_path.open("a", encoding="utf-8") as log:
            log.write(f"\n$ (cd {cwd} && {' '.join(args)})\n")
            log.flush()
            proc = subprocess.Popen(
                args,
                cwd=cwd,
                env={**_build_env(), **(env or {})},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                out_lines.append(line)
                if not line.startswith(("go: ", "#")):
                    lines += 1
            rc = proc.wait()
        done.set()
        beat.join()
        if rc != 0:
            raise BuildError(
                _diagnose("".join(out_lines), module), hint=f"see the build log {self.log_path}"
            )
        return "".join(out_lines)


def _diagnose(output: str, module: str) -> str:
    """Turn go's output into a one-line reason."""
    if re.search(r"(dial tcp|no such host|connection refused|i/o timeout|TLS handshake)", output):
        return f"module proxy unreachable: {module}"
    m = re.search(r"(\S+@\S+): reading \S+: (\d{3}) ", output)
    if m:
        return f"module proxy refused {m.group(1)} (HTTP {m.group(2)})"
    if "requires go >=" in output or "toolchain not available" in output:
        return f"{module} needs a newer Go than {_go_version()}"
    first_error = next((ln.strip() for ln in output.splitlines() if ln.strip()), "no output")
    return f"building {module} failed: {first_error[:200]}"


def _fmt(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


def _fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def _staging_replaces(k8s_gomod: str, staging_version: str) -> list[str]:
    """Replace lines mapping every ./staging module of k8s's go.mod to its published twin."""
    mods = re.findall(r"^\s*(k8s\.io/[A-Za-z0-9._-]+)\s+=>\s+\./staging/", k8s_gomod, re.M)
    if not mods:
        raise BuildError(
            "k8s.io/kubernetes go.mod has no staging replace block",
            hint="pick a release the recipe knows (v1.35.x or v1.36.x)",
        )
    return [f"replace {m} => {m} {staging_version}" for m in sorted(set(mods))]


def _module_download(runner: _Runner, module: str, workdir: Path) -> dict[str, str]:
    """``go mod download -json module@version``: where Go put it (``Dir``, ``GoMod``)."""
    out = runner.run(
        [_go(), "mod", "download", "-json", module],
        cwd=workdir,
        label=f"download {module}",
        module=module,
    )
    try:  # go's own lines ("go: downloading …") may come before the JSON object
        found, _ = json.JSONDecoder().raw_decode(out[out.index("{") :])
    except ValueError:
        found = {}
    if not found.get("GoMod") or not found.get("Dir"):
        raise BuildError(f"module proxy unreachable: {module}", hint="check GOPROXY")
    return found


def _module_gomod(runner: _Runner, module: str, workdir: Path) -> str:
    return Path(_module_download(runner, module, workdir)["GoMod"]).read_text()


def _k8s_ldflags(version: str) -> str:
    minor = version.split(".")[1]
    date = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor=1",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
            f"-X {pkg}.buildDate={date}",
        ]
    return " ".join(flags)


def _build_kubernetes(c: Component, runner: _Runner) -> None:
    work = _fresh_dir(cache_dir() / "build" / f"{c.name}-{c.version}")
    module = f"k8s.io/kubernetes@{c.version}"
    gomod = _module_gomod(runner, module, work)
    staging = "v0." + c.version.removeprefix("v1.")
    lines = ["module mochaos.local/k8sbin", ""]
    lines += [ln for ln in gomod.splitlines() if ln.startswith("godebug")]
    lines += _staging_replaces(gomod, staging)
    (work / "go.mod").write_text("\n".join(lines) + "\n")
    tools = [f"k8s.io/kubernetes/cmd/{b}@{c.version}" for b in c.binaries]
    runner.progress(f"  resolving {len(tools)} commands of {module} (staging {staging})")
    runner.run([_go(), "get", "-tool", *tools], cwd=work, label="go get", module=module)
    ldflags = _k8s_ldflags(c.version)
    # One go build for all four: they share most packages, and the compiler keeps both
    # cores busy across them (a third faster than building one after the other).
    for i, b in enumerate(c.binaries, 1):
        c.path(b).unlink(missing_ok=True)
        runner.progress(f"  [{i}/{len(c.binaries)}] {b} {c.version} …")
    runner.run(
        [
            _go(),
            "build",
            "-v",
            "-trimpath",
            "-tags=selinux,notest",
            "-ldflags",
            ldflags,
            "-o",
            str(c.directory) + "/",
            *(f"k8s.io/kubernetes/cmd/{b}" for b in c.binaries),
        ],
        cwd=work,
        label="kubernetes",
        module=module,
        outputs={b: c.path(b) for b in c.binaries},
    )


def _go_build(
    c: Component,
    runner: _Runner,
    binary: str,
    package: str,
    *,
    cwd: Path,
    module: str,
    step: tuple[int, int] = (1, 1),
    what: str = "",
    ldflags: str = "-s -w",
    env: dict[str, str] | None = None,
) -> None:
    """``go build`` one of ``c``'s binaries from ``package``, with its progress lines: the
    ``step`` of how many, ``what`` is built (default: the component's version), how long."""
    i, n = step
    t0 = time.monotonic()
    runner.progress(f"  [{i}/{n}] {binary} {what or c.version} …")
    runner.run(
        [_go(), "build", "-v", "-trimpath", "-ldflags", ldflags, "-o", str(c.path(binary)),
         package],
        cwd=cwd, label=binary, module=module, env=env,
    )  # fmt: skip
    runner.progress(f"  [{i}/{n}] {binary} built in {_fmt(time.monotonic() - t0)}")


def _build_etcd(c: Component, runner: _Runner) -> None:
    work = _fresh_dir(cache_dir() / "build" / f"{c.name}-{c.version}")
    module = f"go.etcd.io/etcd/server/v3@{c.version}"
    (work / "go.mod").write_text("module mochaos.local/etcdbin\n")
    runner.progress(f"  resolving {module}")
    runner.run([_go(), "get", "-tool", module], cwd=work, label="go get", module=module)
    _go_build(c, runner, "etcd", "go.etcd.io/etcd/server/v3", cwd=work, module=module)


def _build_kwok(c: Component, runner: _Runner) -> None:
    work = _fresh_dir(cache_dir() / "build" / f"{c.name}-{c.version}")
    ver = c.version.removeprefix("v")
    for i, b in enumerate(c.binaries, 1):
        module = f"sigs.k8s.io/kwok/cmd/{b}@{c.version}"
        _go_build(
            c, runner, b, f"sigs.k8s.io/kwok/cmd/{b}",
            cwd=_kwok_module(work, c, runner, module), module=module,
            step=(i, len(c.binaries)),
            ldflags=f"-s -w -X sigs.k8s.io/kwok/pkg/consts.Version={ver}",
        )  # fmt: skip


def _kwok_module(work: Path, c: Component, runner: _Runner, module: str) -> Path:
    """A wrapper module requiring kwok at its own pins (no replaces needed)."""
    if not (work / "go.mod").exists():
        (work / "go.mod").write_text("module mochaos.local/kwokbin\n")
        tools = [f"sigs.k8s.io/kwok/cmd/{b}@{c.version}" for b in c.binaries]
        runner.run([_go(), "get", "-tool", *tools], cwd=work, label="go get", module=module)
    return work


def _build_matrixone_double(c: Component, runner: _Runner) -> None:
    work = _fresh_dir(cache_dir() / "build" / f"{c.name}-{c.version}")
    module = f"{matrixone_double_module.MO_MODULE}@{c.version}"
    mo_gomod = None
    if c.version != matrixone_double_module.pinned_version():
        mo_gomod = _module_gomod(runner, module, work)
    steps = matrixone_double_module.prepare_module(work, c.version, mo_gomod)
    for args in steps:
        runner.progress(f"  resolving {module}")
        runner.run(
            [_go(), *args],
            cwd=work,
            label="go mod",
            module=module,
            env=matrixone_double_module.build_env(),
        )
    _go_build(
        c, runner, c.binaries[0], ".", cwd=work, module=module,
        what=f"(MatrixOne {c.version})", env=matrixone_double_module.build_env(),
    )  # fmt: skip


def _build_kwok_stages(c: Component, runner: _Runner) -> None:
    work = _fresh_dir(cache_dir() / "build" / f"{c.name}-{c.version}")
    module = f"sigs.k8s.io/kwok@{c.version}"
    (work / "go.mod").write_text("module mochaos.local/kwokstages\n")
    runner.progress(f"  reading kwok's default Stages from {module}")
    found = _module_download(runner, module, work)
    kwok_stages.write_defaults(Path(found["Dir"]), c.path(kwok_stages.DEFAULTS_FILE))


def _build_kruise(c: Component, runner: _Runner) -> None:
    work = _fresh_dir(cache_dir() / "build" / f"{c.name}-{c.version}")
    module = f"{kruise_module.MODULE}@{c.version}"
    (work / "go.mod").write_text("module mochaos.local/kruiseprobe\n")
    found = _module_download(runner, module, work)
    (work / "go.mod").write_text(kruise_module.wrapper_gomod(Path(found["GoMod"]).read_text()))
    runner.progress(f"  resolving {module} (raising {', '.join(kruise_module.RAISED)})")
    for args in kruise_module.go_steps(c.version):
        runner.run([_go(), *args], cwd=work, label="go get", module=module)
    binary = c.binaries[0]
    c.path(binary).unlink(missing_ok=True)
    _go_build(c, runner, binary, kruise_module.MODULE, cwd=work, module=module)
    kruise_module.write_manifests(Path(found["Dir"]), c.directory)
    runner.progress(f"  CRDs and webhook configurations read from {module}")


Recipe = Callable[[Component, _Runner], None]
"""Builds one component's binaries into its cache directory."""

_RECIPES: dict[str, Recipe] = {
    "kubernetes": _build_kubernetes,
    "etcd": _build_etcd,
    "kwok": _build_kwok,
    "kwok-stages": _build_kwok_stages,
    "matrixone-double": _build_matrixone_double,
    "kruise": _build_kruise,
}


def build(*, force: bool = False, progress: Progress = _stderr_progress) -> dict[str, Path]:
    """Put every missing control-plane component into the cache; return its binary paths.

    Release binaries are downloaded and verified where ``MOCHAOS_BINARIES`` allows and they
    can be had (:func:`mochaos.cluster.download.obtain`); the rest is built from Go
    modules. Idempotent: a component whose stamp matches is skipped. Raises BuildError
    with a one-line reason on the first failure.
    """
    _obtain(list(COMPONENTS), force=force, progress=progress)
    return binary_paths()


def matrixone_double(version: str | None = None, *, progress: Progress = _stderr_progress) -> Path:
    """The MatrixOne double built against MatrixOne ``version`` (default: the pinned one)."""
    c = matrixone_double_component(version)
    _obtain_alone(c, progress=progress)
    return c.path(matrixone_double_module.BINARY)


def kruise_manager(version: str | None = None, *, progress: Progress = _stderr_progress) -> Path:
    """The kruise-manager binary of OpenKruise ``version`` (default
    :data:`mochaos.kruise.module.DEFAULT_VERSION`), built on first use; its CRDs and
    webhook configurations are in the same folder (:func:`kruise_component`). The one
    recipe for the local cluster's manager and for an image of it."""
    c = kruise_component(version)
    _obtain_alone(c, progress=progress)
    return c.path(kruise_module.BINARY)


def _obtain_alone(c: Component, *, progress: Progress) -> None:
    """Obtain one component under its file lock: test workers and the provider may ask at
    once; one builds, the others wait and find it cached."""
    lock = cache_dir() / "build" / f"{c.name}-{c.version}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock), timeout=1800):
        _obtain([c], force=False, progress=progress)


def obtain(
    components: list[Component],
    *,
    recipes: dict[str, Recipe],
    progress: Progress = _stderr_progress,
) -> None:
    """Put ``components`` built by other modules' ``recipes`` (by component name) into the
    cache, as :func:`build` does its own: one process builds, concurrent callers wait."""
    lock = cache_dir() / "build" / ("+".join(c.name for c in components) + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock), timeout=3600):
        _obtain(components, force=False, progress=progress, recipes=recipes)


def _obtain(
    components: list[Component],
    *,
    force: bool,
    progress: Progress,
    recipes: dict[str, Recipe] | None = None,
) -> None:
    """Download or build what of ``components`` is missing (see :func:`build`)."""
    mode = download.binaries_mode()
    log_path = cache_dir() / "build.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    runner = _Runner(log_path=log_path, progress=progress)
    todo = [c for c in components if force or not c.is_built()]
    if not todo:
        how = ", ".join(f"{c.name} {c.version} {c.obtained_by()}" for c in components)
        runner.progress(f"mo-chaos: binaries cached in {cache_dir() / 'bin'} ({how})")
        return
    download.obtain(
        todo,
        mode=mode,
        build=lambda rest: _build_all(rest, runner, recipes),
        progress=runner.progress,
    )


def build_lanes() -> int:
    """How many components are built at once: ``MOCHAOS_BUILD_LANES`` (default
    :data:`BUILD_LANES`); UsageError for anything but a positive integer."""
    text = os.environ.get("MOCHAOS_BUILD_LANES", "").strip()
    if not text:
        return BUILD_LANES
    if not text.isdigit() or int(text) < 1:
        raise UsageError(
            f"MOCHAOS_BUILD_LANES={text!r} is not a positive integer",
            hint="use 1 (one component after the other) or 2",
        )
    return int(text)


def _build_all(
    todo: list[Component], runner: _Runner, recipes: dict[str, Recipe] | None = None
) -> None:
    """Build ``todo`` from Go modules with ``recipes`` (by component name; default the
    cluster's own) in :func:`build_lanes` lanes: the first component
    (kubernetes, the longest) in a lane of its own, the others shared out over the rest,
    each lane one component after the other. The first failure is raised once every lane
    stopped."""
    _go()
    progress = runner.progress
    lanes = _lanes(todo, build_lanes())
    progress(
        f"mo-chaos: building {', '.join(f'{c.name} {c.version}' for c in todo)} "
        f"with {_go_version()}, {len(lanes)} at a time (log: {runner.log_path})"
    )
    started = time.monotonic()
    chosen = _RECIPES if recipes is None else recipes
    failures: list[BaseException] = []

    def lane(components: list[Component]) -> None:
        for c in components:
            try:
                _build_one(c, runner, chosen[c.name])
            except BaseException as err:
                failures.append(err)
                return

    threads = [threading.Thread(target=lane, args=(cs,), name="build-lane") for cs in lanes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]
    progress(f"mo-chaos: build complete in {_fmt(time.monotonic() - started)}")


def _lanes(todo: list[Component], count: int) -> list[list[Component]]:
    """The first component alone, the others round-robin over the other lanes."""
    if count <= 1 or len(todo) <= 1:
        return [list(todo)]
    rest = count - 1
    return [todo[:1]] + [todo[1 + i :: rest] for i in range(rest) if todo[1 + i :: rest]]


def _build_one(c: Component, runner: _Runner, recipe: Recipe) -> None:
    t0 = time.monotonic()
    runner.progress(f"{c.name} {c.version}:")
    c.directory.mkdir(parents=True, exist_ok=True)
    c.stamp.unlink(missing_ok=True)
    recipe(c, runner)
    c.stamp.write_text(f"{c.fingerprint()} {c.recipe}\n")
    runner.progress(f"{c.name} {c.version} done in {_fmt(time.monotonic() - t0)}")
