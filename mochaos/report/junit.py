"""JUnit XML: the per-test properties mo-chaos records, our schema, merging and reading.

Properties travel on each ``<testcase>`` (pytest's ``record_property``), which
needs ``junit_family = xunit1``; the schema in ``junit.xsd`` is what CI readers
accept, and :func:`validate_junit` checks a file against it.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from mochaos.invariants.verdict import Status
from mochaos.report.result import ScenarioResult

SCHEMA_PATH = Path(__file__).with_name("junit.xsd")
_TOTALS = ("tests", "failures", "errors", "skipped")


def _natural_key(text: str) -> list[object]:
    """Sort key that orders B2 before B10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _invariant_statuses(result: ScenarioResult) -> dict[str, Status]:
    """One status per invariant id (first-seen order); a failure anywhere wins."""
    rank = {"fail": 2, "pass": 1, "skipped": 0}
    merged: dict[str, Status] = {}
    for verdict in result.verdicts:
        old = merged.get(verdict.invariant)
        if old is None or rank[verdict.status] > rank[old]:
            merged[verdict.invariant] = verdict.status
    return merged


def bug_ids(result: ScenarioResult) -> list[str]:
    """Bug IDs hit by the test: the result's own plus those of failed invariants."""
    bugs = set(result.bugs)
    for verdict in result.verdicts:
        if verdict.failed:
            bugs.update(verdict.bugs)
    return sorted(bugs, key=_natural_key)


def attachment_line(folder: Path) -> str:
    """The line CI servers (GitLab) turn into a link to the test's report folder."""
    return f"[[ATTACHMENT|{folder.resolve()}]]"


def junit_properties(
    result: ScenarioResult, *, folder: Path | None = None
) -> list[tuple[str, str]]:
    """The JUnit properties of one test, in a fixed order, all values strings."""
    props = [
        ("operator.target", result.operator_target),
        ("operator.version", result.operator_version),
        ("cluster.provider", result.cluster_provider),
        ("cluster.k8s_version", result.k8s_version),
        ("verdict", result.outcome),
    ]
    props += [(f"invariant.{inv}", status) for inv, status in _invariant_statuses(result).items()]
    props.append(("retries.finalize.max", str(result.max_finalize_retries)))
    props += [
        (f"retries.finalize.{claim}", str(count))
        for claim, count in sorted(result.finalize_retries.items())
    ]
    props.append(("agent.migration_retries", str(result.agent_migration_retries)))
    writes = sorted(result.operator_writes.items())
    props += [(f"operator.writes.{verb}", str(n)) for verb, n in writes]
    props.append(("pods.churned", str(result.churned_pods)))
    props.append(("bugs", ",".join(bug_ids(result))))
    if result.seed is not None:
        props.append(("seed", str(result.seed)))
    props += [(f"audit.{k}", f"{v:g}") for k, v in sorted(result.audit_counts.items())]
    if result.phase:
        props.append(("error.phase", result.phase))
    if folder is not None:
        props.append(("reports.dir", str(folder.resolve())))
        timeline = result.artifacts.get("timeline_html") or result.artifacts.get("timeline_md")
        if timeline:
            props.append(("reports.timeline", str(Path(timeline).resolve())))
    return props


@dataclass(frozen=True, slots=True)
class JUnitCase:
    """One ``<testcase>`` as a CI reader sees it."""

    name: str
    outcome: str
    """passed, failure, error or skipped."""
    message: str = ""
    """The failure/error/skipped element's ``message`` attribute."""
    text: str = ""
    """That element's text (the traceback or the skip reason)."""
    properties: dict[str, str] = field(default_factory=dict)


def read_junit(path: Path) -> dict[str, JUnitCase]:
    """The test cases of a JUnit XML file by test name (a later duplicate name wins)."""
    cases: dict[str, JUnitCase] = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        outcome, message, text = "passed", "", ""
        for tag in ("failure", "error", "skipped"):
            el = tc.find(tag)
            if el is not None:
                outcome, message, text = tag, el.get("message") or "", el.text or ""
        props = {str(p.get("name")): str(p.get("value")) for p in tc.iter("property")}
        name = str(tc.get("name"))
        cases[name] = JUnitCase(name, outcome, message, text, props)
    return cases


@cache
def _schema() -> Any:
    # xmlschema is only needed to validate (tests, CI), not to record properties.
    import xmlschema

    return xmlschema.XMLSchema(str(SCHEMA_PATH))


def validate_junit(path: Path) -> None:
    """Check a JUnit XML file against ``junit.xsd``; raise ValueError with the first problem."""
    from xmlschema import XMLSchemaException

    try:
        errors = _schema().iter_errors(str(path))
        first = next(errors, None)
    except (OSError, ET.ParseError, XMLSchemaException) as exc:
        raise ValueError(f"{path}: not a readable XML file: {exc}") from exc
    if first is not None:
        where = first.path or "/"
        raise ValueError(f"{path}: {where}: {first.reason}")


def merge_junit(
    runs: Iterable[tuple[str, Path]], out: Path, *, name: str, rename_cases: bool = True
) -> Path:
    """Merge JUnit files into one ``<testsuites>``; each suite is renamed ``<label>: <name>``.

    ``runs`` pairs a label (e.g. ``run-2``) with a JUnit file; missing or unparsable
    files are skipped (a crashed run). Totals on the root are the sums of the suites'.
    ``rename_cases`` suffixes each case with ``[<label>]``: runs of the same tests need it,
    shards (each test in one of them) do not.
    """
    root = ET.Element("testsuites", name=name)
    totals = dict.fromkeys(_TOTALS, 0)
    elapsed = 0.0
    for label, path in runs:
        try:
            tree = ET.parse(path).getroot()
        except (OSError, ET.ParseError):
            continue
        suites = [tree] if tree.tag == "testsuite" else tree.findall("testsuite")
        for suite in suites:
            suite.set("name", f"{label}: {suite.get('name', '')}")
            for case in suite.iter("testcase") if rename_cases else ():
                # CI servers key test cases by name: each run's cases must stay distinct.
                case.set("name", f"{case.get('name', '')} [{label}]")
            for key in _TOTALS:
                totals[key] += int(suite.get(key, "0"))
            elapsed += float(suite.get("time", "0"))
            root.append(suite)
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{elapsed:.3f}")
    out.write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode"),
        encoding="utf-8",
    )
    return out
