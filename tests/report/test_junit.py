"""JUnit properties, our JUnit schema, and properties surviving pytest-xdist."""

import xml.etree.ElementTree as ET

import pytest

from mochaos.invariants.verdict import Verdict
from mochaos.report.junit import (
    SCHEMA_PATH,
    JUnitCase,
    junit_properties,
    merge_junit,
    read_junit,
    validate_junit,
)
from mochaos.report.result import ScenarioResult

pytest_plugins = ["pytester"]


def _result(**kw) -> ScenarioResult:
    base = dict(
        nodeid="suites/test_race.py::test_scalein",
        outcome="failed",
        operator_target="model:upstream",
        operator_version="eb9b356",
        cluster_provider="local",
        k8s_version="v1.31.0",
        verdicts=[
            Verdict("finalizer-completes", "fail", ("B1",)),
            Verdict("single-binding", "pass", ("#581",)),
            Verdict("scalein-skips-migrating", "fail", ("B6", "B2")),
            Verdict("no-leaked-pods", "skipped"),
        ],
        finalize_retries={"s1-x": 40, "s1-a": 2},
        agent_migration_retries=20,
        operator_writes={"update": 9, "patch": 4, "refused": 1},
        churned_pods=2,
        seed=7,
    )
    return ScenarioResult(**(base | kw))


def test_properties_in_the_documented_order():
    assert junit_properties(_result()) == [
        ("operator.target", "model:upstream"),
        ("operator.version", "eb9b356"),
        ("cluster.provider", "local"),
        ("cluster.k8s_version", "v1.31.0"),
        ("verdict", "failed"),
        ("invariant.finalizer-completes", "fail"),
        ("invariant.single-binding", "pass"),
        ("invariant.scalein-skips-migrating", "fail"),
        ("invariant.no-leaked-pods", "skipped"),
        ("retries.finalize.max", "40"),
        ("retries.finalize.s1-a", "2"),
        ("retries.finalize.s1-x", "40"),
        ("agent.migration_retries", "20"),
        ("operator.writes.patch", "4"),
        ("operator.writes.refused", "1"),
        ("operator.writes.update", "9"),
        ("pods.churned", "2"),
        ("bugs", "B1,B2,B6"),  # passed invariants' bugs (#581) are not hits
        ("seed", "7"),
    ]


def test_bugs_are_deduplicated_and_naturally_sorted_and_seed_is_optional():
    verdicts = [
        Verdict("a", "fail", ("B10", "B2")),
        Verdict("b", "fail", ("B2", "#581")),
        Verdict("a", "pass"),  # a repeated id keeps its failure
    ]
    props = dict(junit_properties(_result(verdicts=verdicts, bugs=["B5"], seed=None)))
    assert props["bugs"] == "#581,B2,B5,B10"
    assert props["invariant.a"] == "fail"
    assert "seed" not in props
    empty = dict(junit_properties(_result(verdicts=[], finalize_retries={}, seed=None)))
    assert (empty["retries.finalize.max"], empty["bugs"]) == ("0", "")


INNER_TEST = """
import pytest
from mochaos.report.junit import junit_properties
from mochaos.report.result import ScenarioResult
from mochaos.invariants.verdict import Verdict


@pytest.mark.parametrize("n", range(4))
def test_scenario(record_property, n):
    result = ScenarioResult(
        nodeid=f"scenario-{n}",
        outcome="failed" if n == 3 else "passed",
        operator_target="model:upstream",
        verdicts=[Verdict("finalizer-completes", "fail" if n == 3 else "pass", ("B1",))],
        finalize_retries={"x": 10 + n},
        seed=n,
    )
    for name, value in junit_properties(result):
        record_property(name, value)
    assert n != 3, "finalizer-completes failed"


@pytest.mark.skip(reason="no epilogue")
def test_skipped():
    pass
"""


def _check_properties(cases: dict[str, JUnitCase]):
    assert set(cases) == {f"test_scenario[{n}]" for n in range(4)} | {"test_skipped"}
    for n in range(4):
        case = cases[f"test_scenario[{n}]"]
        assert case.outcome == ("failure" if n == 3 else "passed")
        props = case.properties
        assert props["seed"] == str(n)
        assert props["retries.finalize.x"] == str(10 + n)
        assert props["verdict"] == ("failed" if n == 3 else "passed")
    assert "finalizer-completes failed" in cases["test_scenario[3]"].message
    assert "AssertionError" in cases["test_scenario[3]"].text
    skipped = cases["test_skipped"]
    assert (skipped.outcome, skipped.message) == ("skipped", "no epilogue")


def test_pytest_junitxml_carries_the_properties_and_validates(pytester):
    pytester.makepyfile(test_inner=INNER_TEST)
    result = pytester.runpytest("-o", "junit_family=xunit1", "--junitxml=out.xml")
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    result.stdout.no_fnmatch_line("*incompatible with junit_family*")
    out = pytester.path / "out.xml"
    _check_properties(read_junit(out))
    validate_junit(out)


def test_properties_survive_xdist(pytester):
    pytester.makepyfile(test_inner=INNER_TEST)
    result = pytester.runpytest_subprocess(
        "-p", "xdist", "-n", "2", "-o", "junit_family=xunit1", "--junitxml=out.xml"
    )
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*2 workers*"])
    out = pytester.path / "out.xml"
    _check_properties(read_junit(out))
    validate_junit(out)


def test_default_xunit2_family_warns_about_properties(pytester):
    """Why the project sets junit_family = xunit1: xunit2 does not define testcase properties."""
    pytester.makepyfile(test_inner=INNER_TEST)
    result = pytester.runpytest("--junitxml=out.xml")
    result.stdout.fnmatch_lines(["*record_property is incompatible with junit_family 'xunit2'*"])


VALID = (
    '<testsuites name="x"><testsuite name="s" tests="1" failures="1" errors="0" skipped="0" '
    'time="0.5" timestamp="2026-11-29T19:05:01+00:00"><testcase classname="c" name="t" '
    'time="0.1"><properties><property name="verdict" value="failed"/></properties>'
    '<failure message="boom">trace</failure><system-out>out</system-out></testcase>'
    "</testsuite></testsuites>"
)


def test_validate_junit_accepts_a_valid_file(tmp_path):
    path = tmp_path / "ok.xml"
    path.write_text(VALID)
    validate_junit(path)


@pytest.mark.parametrize(
    ("broken", "why"),
    [
        (VALID.replace('classname="c" name="t"', 'classname="c"'), "name"),
        (VALID.replace('<property name="verdict"', "<property"), "name"),
        (VALID.replace('time="0.1"', 'time="fast"'), "time"),
        (VALID.replace("<system-out>out</system-out>", "<stdout>out</stdout>"), "stdout"),
        (VALID.replace('tests="1"', 'tests="-1"'), "tests"),
        ("<results><test/></results>", "results"),
        (VALID[:-20], "not a readable XML"),
    ],
)
def test_validate_junit_rejects_broken_files(tmp_path, broken, why):
    path = tmp_path / "broken.xml"
    path.write_text(broken)
    with pytest.raises(ValueError, match=why):
        validate_junit(path)


def test_validate_junit_rejects_a_missing_file(tmp_path):
    with pytest.raises(ValueError, match="not a readable XML"):
        validate_junit(tmp_path / "missing.xml")


def test_schema_is_our_own_file():
    text = SCHEMA_PATH.read_text()
    assert "Written for mo-chaos" in text


def test_merge_junit_sums_totals_and_labels_runs(tmp_path):
    one, two = tmp_path / "1.xml", tmp_path / "2.xml"
    one.write_text(VALID)
    two.write_text(VALID.replace('failures="1"', 'failures="0"').replace('time="0.5"', 'time="1"'))
    (tmp_path / "3.xml").write_text("<testsuites")  # a crashed run: skipped
    out = merge_junit(
        [("run-1", one), ("run-2", two), ("run-3", tmp_path / "3.xml"), ("run-4", tmp_path / "4")],
        tmp_path / "merged.xml",
        name="qual",
    )
    root = ET.parse(out).getroot()
    assert [s.get("name") for s in root.iter("testsuite")] == ["run-1: s", "run-2: s"]
    assert (root.get("tests"), root.get("failures"), root.get("time")) == ("2", "1", "1.500")
    validate_junit(out)
