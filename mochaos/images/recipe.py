"""What every image build shares: a cache entry keyed by all its inputs, and numbered steps.

A build's key is a digest of everything that decides its output (the version, the
commands, the packages, the image configuration, the Go toolchain), so changing any of
them builds afresh and nothing else does. Entries live under ``<cache>/images/`` and count
only once their stamp is written; one build per entry at a time (a file lock), the others
wait and reuse it. Steps print ``[i/n] what …`` when they start, a line every
``HEARTBEAT`` seconds while they run and their duration when done; a failing step is one
line naming the image, the step and the build log.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from mochaos.errors import BuildError, InfraError, UsageError
from mochaos.paths import cache_dir
from mochaos.tooling.progress_callback import Progress
from mochaos.tooling.runner import Runner, SubprocessRunner

HEARTBEAT = 30.0
"""Seconds between "still working" lines of a long step."""
LOCK_TIMEOUT = 3600.0
"""How long a second builder waits for the first (a cold MatrixOne build on 2 cores)."""
STAMP = ".complete"
RECIPE_LABEL = "io.mochaos.recipe"
"""The image label holding the key of the recipe that built it (absent: not built by us)."""


def fingerprint(inputs: Mapping[str, Any]) -> str:
    """A short digest of a recipe's inputs (JSON, keys sorted)."""
    raw = json.dumps(inputs, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Entry:
    """One cached build: ``<cache>/images/<name>-<version>-<key>/``."""

    name: str
    version: str
    key: str

    @property
    def directory(self) -> Path:
        """Where the build's outputs live."""
        return cache_dir() / "images" / f"{self.name}-{self.version}-{self.key}"

    @property
    def log_path(self) -> Path:
        """The build log (every command and its output)."""
        return cache_dir() / "images" / f"{self.name}-{self.version}-{self.key}.log"

    def complete(self) -> bool:
        """True once every output was written (the stamp is written last)."""
        return (self.directory / STAMP).is_file()

    @contextlib.contextmanager
    def building(self) -> Iterator[bool]:
        """Hold the entry's lock; yields whether a build is still needed. On success the
        stamp is written; on failure the partial outputs are removed."""
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.directory) + ".lock", timeout=LOCK_TIMEOUT):
            if self.complete():
                yield False
                return
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory.mkdir(parents=True)
            try:
                yield True
            except BaseException:
                shutil.rmtree(self.directory, ignore_errors=True)
                raise
            (self.directory / STAMP).write_text(f"{self.key}\n")

    def runner(self) -> Runner:
        """A runner writing every command's output to the build log and nothing on screen."""
        return SubprocessRunner(progress=None, log_path=self.log_path)


def elapsed(seconds: float) -> str:
    """``1m05s`` or ``42s``."""
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


class Steps:
    """The numbered steps of one build of ``title``, reported through ``progress``."""

    def __init__(
        self,
        title: str,
        total: int,
        *,
        progress: Progress,
        log_path: Path,
        heartbeat: float = HEARTBEAT,
    ) -> None:
        self.title = title
        self.total = total
        self.progress = progress
        self.log_path = log_path
        self.heartbeat = heartbeat
        self.done = 0
        self.times: dict[str, float] = {}

    @contextlib.contextmanager
    def step(self, name: str, *, log_path: Path | None = None) -> Iterator[None]:
        """Run one step: announced, kept alive by a heartbeat, timed; a failure inside it
        becomes one BuildError line naming the image, the step and the log (``log_path``
        when the step keeps its own); a refusal stays the UsageError it is."""
        log = log_path or self.log_path
        number = self.done + 1
        label = f"{self.title} [{number}/{self.total}] {name}"
        self.progress(f"{label} …")
        t0 = time.monotonic()
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.heartbeat):
                self.progress(f"{label}: {elapsed(time.monotonic() - t0)}")

        thread = threading.Thread(target=beat, daemon=True)
        thread.start()
        try:
            yield
        except UsageError:
            raise
        except InfraError as err:
            raise BuildError(
                f"{self.title}: {name}: {err.what}", hint=f"see the build log {log}"
            ) from err
        except OSError as err:
            raise BuildError(
                f"{self.title}: {name}: {err}", hint=f"see the build log {log}"
            ) from err
        finally:
            stop.set()
            thread.join()
        seconds = time.monotonic() - t0
        self.times[name] = seconds
        self.done = number
        self.progress(f"{label} done in {elapsed(seconds)}")
