"""Run one command line: stream its progress, keep its output in a log, fail in one line.

A runner executes one command, streams its progress lines to the terminal,
keeps its full output in a log file, and turns a failure into an InfraError
with one line of reason. Tests pass :class:`RecordingRunner` as an explicit
``runner=`` keyword: it records every command line and answers from a script.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from mochaos.errors import InfraError
from mochaos.tooling.progress_callback import Progress, say


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
