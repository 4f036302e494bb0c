"""Putting components into the cache: release downloads first where allowed, then Go builds.

:func:`obtain` is the one way in: it skips what is cached (stamp matches), downloads what
``MOCHAOS_BINARIES`` allows (:mod:`mochaos.binaries.download`), and builds the rest with the
caller's recipes, in :func:`build_lanes` lanes, under a file lock so that test workers and
the local provider asking at once build once. Every line goes to the caller's progress and
to the build log (``<cache>/build.log``).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence

from filelock import FileLock

from mochaos.binaries import download
from mochaos.binaries.component import Component, Recipe
from mochaos.binaries.go import Runner, elapsed, go, go_version, stderr_progress
from mochaos.errors import UsageError
from mochaos.paths import cache_dir
from mochaos.tooling.progress_callback import Progress

BUILD_LANES = 1
"""Components built at once by default. With 2, the first component (kubernetes, most of a
cold build) gets a lane of its own and the others are built one after the other beside it.
On 2 cores that is slower (bench/builds/fresh_machine.py --lanes 1,2: 7 min 56 s against 7 min
08 s for one lane, docs/speed.md), so one lane is the default."""

LOCK_TIMEOUT = 3600.0
"""Seconds a caller waits for another process's build of the same components."""


def obtain(
    components: Sequence[Component],
    *,
    recipes: Mapping[str, Recipe],
    progress: Progress = stderr_progress,
    force: bool = False,
) -> None:
    """Put every missing one of ``components`` into the cache, built by ``recipes`` (by
    component name) when it is not downloaded; ``force`` rebuilds what is cached.

    Under a file lock named after the components: one process builds, concurrent callers
    of the same components wait for it and find them cached. Raises BuildError with a
    one-line reason on the first failure.
    """
    name = "+".join(c.name for c in components)
    if len(components) == 1:
        name = f"{name}-{components[0].version}"
    lock = cache_dir() / "build" / f"{name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock), timeout=LOCK_TIMEOUT):
        _obtain(components, recipes, progress=progress, force=force)


def _obtain(
    components: Sequence[Component],
    recipes: Mapping[str, Recipe],
    *,
    progress: Progress,
    force: bool,
) -> None:
    mode = download.binaries_mode()
    log_path = cache_dir() / "build.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    runner = Runner(log_path=log_path, progress=progress)
    todo = [c for c in components if force or not c.is_built()]
    if not todo:
        how = ", ".join(f"{c.name} {c.version} {c.obtained_by()}" for c in components)
        runner.progress(f"mo-chaos: binaries cached in {cache_dir() / 'bin'} ({how})")
        return
    download.obtain(
        todo,
        mode=mode,
        build=lambda rest: build_all(rest, runner, recipes),  # type: ignore[arg-type]
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


def build_all(todo: list[Component], runner: Runner, recipes: Mapping[str, Recipe]) -> None:
    """Build ``todo`` from Go modules with ``recipes`` (by component name) in
    :func:`build_lanes` lanes: the first component (kubernetes, the longest) in a lane of
    its own, the others shared out over the rest, each lane one component after the other.
    The first failure is raised once every lane stopped."""
    go()
    progress = runner.progress
    lanes = lanes_of(todo, build_lanes())
    progress(
        f"mo-chaos: building {', '.join(f'{c.name} {c.version}' for c in todo)} "
        f"with {go_version()}, {len(lanes)} at a time (log: {runner.log_path})"
    )
    started = time.monotonic()
    failures: list[BaseException] = []

    def lane(components: list[Component]) -> None:
        for c in components:
            try:
                _build_one(c, runner, recipes[c.name])
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
    progress(f"mo-chaos: build complete in {elapsed(time.monotonic() - started)}")


def lanes_of(todo: list[Component], count: int) -> list[list[Component]]:
    """The first component alone, the others round-robin over the other lanes."""
    if count <= 1 or len(todo) <= 1:
        return [list(todo)]
    rest = count - 1
    return [todo[:1]] + [todo[1 + i :: rest] for i in range(rest) if todo[1 + i :: rest]]


def _build_one(c: Component, runner: Runner, recipe: Recipe) -> None:
    t0 = time.monotonic()
    runner.progress(f"{c.name} {c.version}:")
    c.directory.mkdir(parents=True, exist_ok=True)
    c.stamp.unlink(missing_ok=True)
    recipe(c, runner)
    c.stamp.write_text(f"{c.fingerprint()} {c.recipe}\n")
    runner.progress(f"{c.name} {c.version} done in {elapsed(time.monotonic() - t0)}")
