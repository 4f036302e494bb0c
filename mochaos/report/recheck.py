"""Re-judge a saved history: what ``python -m mochaos check <history.jsonl[.gz]>`` does.

Every invariant is evaluated at settle time on the test's ``history.jsonl`` with the
options the run judged with, read from the ``result.json`` beside it when present
(the run options' defaults otherwise); options given on the command line override
them. The answer is one line per invariant.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mochaos.config import CHECK_SETTINGS, CheckOptions
from mochaos.errors import UsageError
from mochaos.invariants import evaluate
from mochaos.invariants.options import override, validate_options
from mochaos.invariants.verdict import Verdict
from mochaos.observe.history import History
from mochaos.report.summary import RESULT_FILE

_HINT = "give the history.jsonl (or .jsonl.gz) of a test's folder under reports/<run>/"


def load_history(path: Path) -> History:
    """The history saved at ``path``; UsageError (one line) when it is missing or garbled."""
    if not path.is_file():
        raise UsageError(f"history file {path} does not exist", hint=_HINT)
    try:
        history = History.from_jsonl(path)
    except (OSError, EOFError, UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        reason = str(err).splitlines()[0] if str(err) else ""
        raise UsageError(
            f"{path} is not a mo-chaos history ({type(err).__name__}: {reason})", hint=_HINT
        ) from err
    if not history:
        raise UsageError(f"{path} holds no entries", hint=_HINT)
    return history


def recorded_options(history_path: Path) -> tuple[CheckOptions, str]:
    """The options of the run that wrote the history, and where they came from."""
    result = history_path.parent / RESULT_FILE
    if not result.is_file():
        return CheckOptions(), f"the run options' defaults ({RESULT_FILE} not found)"
    try:
        data: Any = json.loads(result.read_text(encoding="utf-8"))
        recorded = data.get("check_options") if isinstance(data, dict) else None
        if not recorded:
            return CheckOptions(), f"the run options' defaults ({RESULT_FILE} names none)"
        options = CheckOptions(**recorded)
        validate_options(options)
    except (OSError, ValueError, TypeError) as err:
        raise UsageError(
            f"{result} is not a mo-chaos test result ({type(err).__name__}: {err})",
            hint="fix or remove it, and give the options on the command line",
        ) from err
    return options, str(result)


def recheck(
    history_path: Path, overrides: Mapping[str, float | int | None] | None = None
) -> tuple[History, list[Verdict], CheckOptions, str]:
    """Judge the saved history; returns it, the verdicts, the options and their origin.

    ``overrides``: values of ``config.CHECK_SETTINGS`` by name, in operator time (None: the
    run's); UsageError for a name that is not one.
    """
    history = load_history(history_path)
    options, origin = recorded_options(history_path)
    overrides = dict(overrides or {})
    unknown = set(overrides) - {s.name for s in CHECK_SETTINGS}
    if unknown:
        raise UsageError(f"not an invariant threshold: {', '.join(sorted(unknown))}")
    given = {k: v for k, v in overrides.items() if v is not None}
    if given:
        options = override(options, **given)
        origin += "; overridden: " + ", ".join(f"{k}={v:g}" for k, v in given.items())
    return history, evaluate(history, options, final=True), options, origin


def verdict_line(verdict: Verdict, start: float) -> str:
    """``PASS id: note``, ``SKIP id: note``, ``FAIL id [bugs] at +t s (seq n): what (objects)``."""
    viol = verdict.violation
    if viol is None:
        status = {"pass": "PASS", "skipped": "SKIP"}.get(verdict.status, "FAIL")
        return f"{status} {verdict.invariant}: {verdict.note}"
    bugs = f" [{','.join(verdict.bugs)}]" if verdict.bugs else ""
    what = " ".join(viol.message.split())
    return (
        f"FAIL {verdict.invariant}{bugs} at +{viol.t - start:.1f}s (seq {viol.seq}): {what} "
        f"({', '.join(viol.objects)})"
    )


def options_line(options: CheckOptions, origin: str) -> str:
    """The options judged with, in one line, and where they came from."""
    values = " ".join(f"{k}={v:g}" for k, v in asdict(options).items())
    return f"options: {values} (from {origin})"
