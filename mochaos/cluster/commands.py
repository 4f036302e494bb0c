"""The plumbing of the kind path: run CLIs (kind, helm), wait on conditions, apply manifests.

A runner executes one command, streams its progress lines to the terminal,
keeps its full output in a log file, and turns a failure into an InfraError
with one line of reason. Tests pass :class:`RecordingRunner` as an explicit
``runner=`` keyword: it records every command line and answers from a script.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import string
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml
from tenacity import RetryError, Retrying, retry_if_result, stop_after_delay, wait_fixed

from mochaos.errors import InfraError, UsageError
from mochaos.progress import announce

MANIFESTS = Path(__file__).resolve().parents[1] / "manifests"
"""The packaged manifests/ folder (templates, kind audit policy)."""

FIELD_MANAGER = "mochaos"

Progress = Callable[[str], None]


def say(line: str) -> None:
    """One progress line of a long step (shown live; see mochaos.progress)."""
    announce(line)


@dataclass(frozen=True, slots=True)
class Result:
    """The outcome of one command."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str = ""
    stderr: str = ""


class Runner(Protocol):
    """Runs one command line; raises InfraError when it fails and ``check`` is set."""

    def __call__(
        self,
        argv: Sequence[str],
        *,
        what: str,
        hint: str = "",
        timeout: float = 600.0,
        check: bool = True,
        echo_stdout: bool = False,
    ) -> Result:
        """Run ``argv``; ``what`` names the step in error messages."""
        ...


def reason(result: Result) -> str:
    """The most telling line of a failed command's output (kind/helm print it last).

    kind prints the output of the docker command it ran after ``Command Output:``;
    that is the cause, so the prefix is dropped and the text kept.
    """
    text = result.stderr + "\n" + result.stdout
    lines = [ln.strip().removeprefix("Command Output:").strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        return "no output"
    return re.sub(r"^(ERROR|Error|error):\s*", "", lines[-1])[:300]


def check_result(result: Result, *, what: str, hint: str = "") -> Result:
    """Return the result, or raise InfraError naming the step and the reason."""
    if result.returncode != 0:
        raise InfraError(f"{what} failed (exit {result.returncode}): {reason(result)}", hint=hint)
    return result


class SubprocessRunner:
    """Runs commands as child processes; progress to ``progress``, output to ``log_path``.

    ``env`` adds variables to the children's environment (ours is inherited).
    """

    def __init__(
        self,
        *,
        progress: Progress | None = say,
        log_path: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.progress = progress
        self.log_path = log_path
        self.env = {**os.environ, **env} if env is not None else None

    def __call__(
        self,
        argv: Sequence[str],
        *,
        what: str,
        hint: str = "",
        timeout: float = 600.0,
        check: bool = True,
        echo_stdout: bool = False,
    ) -> Result:
        """Run ``argv`` to completion (killing our child after ``timeout`` seconds)."""
        argv = tuple(argv)
        try:
            proc = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                env=self.env,
                text=True,
                errors="replace",
            )
        except OSError as err:
            raise InfraError(f"{what} could not start {argv[0]}: {err}", hint=hint) from err
        out: list[str] = []
        err_lines: list[str] = []
        readers = [
            threading.Thread(target=self._drain, args=(proc.stdout, out, echo_stdout), daemon=True),
            threading.Thread(target=self._drain, args=(proc.stderr, err_lines, True), daemon=True),
        ]
        for t in readers:
            t.start()
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            proc.kill()
            proc.wait()
            self._log(argv, "".join(out), "".join(err_lines), "timeout")
            raise InfraError(f"{what} timed out after {timeout:.0f}s", hint=hint) from exc
        for t in readers:
            t.join()
        result = Result(argv, returncode, "".join(out), "".join(err_lines))
        self._log(argv, result.stdout, result.stderr, str(returncode))
        return check_result(result, what=what, hint=hint) if check else result

    def _drain(self, stream, sink: list[str], show: bool) -> None:
        for line in stream:
            sink.append(line)
            if show and self.progress and line.strip():
                self.progress(line.rstrip())

    def _log(self, argv: tuple[str, ...], stdout: str, stderr: str, status: str) -> None:
        if self.log_path is None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("a", encoding="utf-8") as fh:
            fh.write(f"$ {shlex.join(argv)}\n{stdout}{stderr}(exit {status})\n")


Answer = Result | str | Exception


@dataclass
class RecordingRunner:
    """A runner for tests: records command lines, answers from ``script``.

    ``script`` maps a command prefix (the words joined by spaces, e.g.
    ``"kind get clusters"``) to an answer: a string (stdout, exit 0), a
    :class:`Result` (its exit status and output), or an exception to raise.
    The longest matching prefix wins; unmatched commands succeed silently.
    """

    script: Mapping[str, Answer] = field(default_factory=dict)
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def __call__(
        self,
        argv: Sequence[str],
        *,
        what: str,
        hint: str = "",
        timeout: float = 600.0,
        check: bool = True,
        echo_stdout: bool = False,
    ) -> Result:
        """Record ``argv`` and return (or raise) the scripted answer."""
        argv = tuple(argv)
        self.calls.append(argv)
        answer = self._answer(argv)
        if isinstance(answer, Exception):
            raise answer
        if isinstance(answer, str):
            answer = Result(argv, 0, answer)
        result = Result(argv, answer.returncode, answer.stdout, answer.stderr)
        return check_result(result, what=what, hint=hint) if check else result

    def _answer(self, argv: tuple[str, ...]) -> Answer:
        words = " ".join([Path(argv[0]).name, *argv[1:]])
        best = ""
        for prefix in self.script:
            if (words == prefix or words.startswith(prefix + " ")) and len(prefix) > len(best):
                best = prefix
        return self.script[best] if best else Result(argv, 0)

    def commands(self) -> list[str]:
        """Every recorded command line with the program's basename, as one string each."""
        return [" ".join([Path(a[0]).name, *a[1:]]) for a in self.calls]


# --------------------------------------------------------------------------
# Tools on PATH and their versions
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tool:
    """A CLI we drive, the oldest version we accept, and how to install it."""

    name: str
    minimum: tuple[int, int, int]
    why: str
    install: str
    version_args: tuple[str, ...]


def require_tool(tool: Tool, *, search_path: str | None = None) -> str:
    """The tool's path on PATH (or ``search_path``); InfraError naming the install command."""
    found = shutil.which(tool.name, path=search_path)
    if found is None:
        raise InfraError(f"{tool.name} not found on PATH", hint=f"install it with {tool.install}")
    return found


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first ``vX.Y.Z`` (or ``vX.Y``, patch 0) in a tool's version output."""
    m = re.search(r"v?(\d+)\.(\d+)(?:\.(\d+))?", text)
    return (int(m[1]), int(m[2]), int(m[3] or 0)) if m else None


def check_version(tool: Tool, path: str, *, runner: Runner) -> tuple[int, int, int]:
    """Run the tool's version command; InfraError when it is older than the minimum."""
    result = runner([path, *tool.version_args], what=f"{tool.name} version", timeout=60)
    found = parse_version(result.stdout + result.stderr)
    want = ".".join(map(str, tool.minimum))
    if found is None:
        raise InfraError(
            f"cannot read the version of {tool.name} from {reason(result)!r}",
            hint=f"install {tool.name} >= {want} with {tool.install}",
        )
    if found < tool.minimum:
        have = ".".join(map(str, found))
        raise InfraError(
            f"{tool.name} {have} is too old ({tool.why})",
            hint=f"install {tool.name} >= {want} with {tool.install}",
        )
    return found


# --------------------------------------------------------------------------
# Waiting on a condition
# --------------------------------------------------------------------------


def wait_for(
    check: Callable[[], tuple[bool, str]],
    *,
    what: str,
    timeout: float,
    interval: float = 2.0,
    hint: str = "",
) -> str:
    """Poll ``check`` (-> (done, description)) until done; InfraError with the last description.

    The policy: a fixed ``interval`` between polls, give up after ``timeout``.
    An exception from ``check`` counts as "not yet" and its text becomes the
    description, so a flaky API does not end the wait early.
    """
    last = ["nothing observed yet"]
    started = time.monotonic()

    def attempt() -> bool:
        try:
            done, last[0] = check()
        except Exception as err:
            done, last[0] = False, f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
        return done

    policy = Retrying(
        stop=stop_after_delay(timeout),
        wait=wait_fixed(interval),
        retry=retry_if_result(lambda done: not done),
    )
    try:
        policy(attempt)
    except RetryError as err:
        waited = time.monotonic() - started
        raise InfraError(f"{what} not ready after {waited:.0f}s: {last[0]}", hint=hint) from err
    return last[0]


# --------------------------------------------------------------------------
# Manifests: render a template, apply objects server-side
# --------------------------------------------------------------------------


def render_manifest(path: Path, values: Mapping[str, object]) -> list[dict[str, Any]]:
    """The YAML documents of a ``${name}`` template with ``values`` filled in."""
    try:
        text = string.Template(path.read_text()).substitute({k: str(v) for k, v in values.items()})
    except KeyError as err:
        raise UsageError(
            f"manifest {path.name} needs a value for ${{{err.args[0]}}}",
            hint="pass it to the renderer",
        ) from err
    return [doc for doc in yaml.safe_load_all(text) if doc]


def apply_objects(
    api_client: Any, docs: Sequence[Mapping[str, Any]], *, dry_run: bool = False
) -> list[dict[str, Any]]:
    """Server-side apply each object (field manager ``mochaos``); the objects the API returned.

    With ``dry_run`` the apiserver validates and defaults every object (CRD
    schema, admission) but persists nothing.
    """
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    dyn = DynamicClient(api_client)
    applied = []
    for doc in docs:
        try:
            resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        except ResourceNotFoundError:
            # A CRD applied a moment ago is not in the discovery cache yet.
            dyn.resources.invalidate_cache()
            resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        out = resource.server_side_apply(
            body=dict(doc),
            namespace=doc["metadata"].get("namespace"),
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
            dry_run="All" if dry_run else None,
        )
        applied.append(out.to_dict())
    return applied
