"""The incident timeline: semantic rows, condensing, our writes, violations, golden files."""

import json
import os
from pathlib import Path

import pytest

from mochaos.ctrl.objects import CLAIMED_BY_LABEL, PHASE_LABEL
from mochaos.invariants.verdict import Verdict, Violation
from mochaos.observe.history import (
    APISERVER_OUTAGE,
    DEPENDENCY_OUTAGE,
    MATRIXONE_FAULT,
    OPERATOR_FREEZE,
    History,
)
from mochaos.report.result import ScenarioResult
from mochaos.report.timeline import build_rows, render_markdown

from support.builders import HistoryBuilder

DATA = Path(__file__).with_name("data")


def _events(rows, obj=None):
    return [r.event for r in rows if obj is None or r.object == obj]


def _bound_claim(b: HistoryBuilder, claim="X", pod="A"):
    b.running_pod(pod, node="n1")
    b.created_claimset("S1", replicas=1)
    b.created_claim(claim, claimset="S1")
    b.edit("Pod", pod, lambda o: o["metadata"]["labels"].update({PHASE_LABEL: "Bound"}))
    b.edit("CNClaim", claim, lambda o: o["spec"].update(podName=pod))
    b.edit("CNClaim", claim, lambda o: o.update(status={"phase": "Bound"}))


# --------------------------------------------------------------------------
# semantic events from object changes
# --------------------------------------------------------------------------


def test_object_changes_become_semantic_events():
    b = HistoryBuilder.recorded()
    _bound_claim(b)
    b.at(1).edit("Pod", "A", lambda o: o["metadata"]["labels"].update({CLAIMED_BY_LABEL: "X"}))
    b.at(2).edit(
        "CNClaim",
        "X",
        lambda o: o["spec"].update(sourcePod={"podName": "A"}, podName="B"),
    )
    b.at(3).edit("CNClaim", "X", lambda o: o["spec"].pop("sourcePod"))
    b.at(4).edit("CNClaimSet", "S1", lambda o: o["spec"].update(replicas=0))
    b.at(5).edit("CNClaim", "X", lambda o: o["metadata"].update(deletionTimestamp="now"))
    b.at(6).delete("CNClaim", "X")
    rows = build_rows(b.history(), [])
    assert _events(rows, "claim/X") == [
        "claim created (set S1)",
        "bound to pod/A",
        "phase Bound",
        "migration requested: pod/A → pod/B",
        "migration completed on pod/B",
        "deletion requested",
        "gone",
    ]
    assert _events(rows, "pod/A") == [
        "pod present; Running; phase label Idle",
        "phase label Idle → Bound",
        "claimed-by=X",
    ]
    assert _events(rows, "claimset/S1") == ["claimset created (replicas 1)", "replicas 1 → 0"]
    assert rows[0].offset == 0 and rows[-1].offset == 6


def test_noise_changes_make_no_rows():
    b = HistoryBuilder.recorded()
    _bound_claim(b)
    before = len(build_rows(b.history(), []))
    b.at(1).edit("Pod", "A", lambda o: o["status"].update(conditions=[{"lastProbeTime": "t"}]))
    b.edit("CNClaim", "X", lambda o: o["metadata"].update(finalizers=["f"]))
    b.edit("CNClaim", "X", lambda o: o["status"].update(migrate={"source": {"connections": 3}}))
    b.edit("CNClaimSet", "S1", lambda o: o.update(status={"replicas": 1}))
    b.edit("CNClaim", "X", lambda o: None)  # resourceVersion only
    assert len(build_rows(b.history(), [])) == before


# --------------------------------------------------------------------------
# our writes
# --------------------------------------------------------------------------


def test_our_write_appears_once_as_the_action_row():
    b = HistoryBuilder.recorded()
    _bound_claim(b)
    scaled = b.at(2).edit("CNClaimSet", "S1", lambda o: o["spec"].update(replicas=3))
    b.action(
        "scale_claimset",
        "CNClaimSet",
        "S1",
        params={"replicas": 3},
        trigger="source_pod_phase(Draining)",
        trigger_rv=1003,
        write_rv=scaled.rv,
        in_window=False,
    )
    rows = build_rows(b.history(), [])
    cs_rows = [r for r in rows if r.object == "claimset/S1"]
    assert [r.event for r in cs_rows][1:] == [
        "scale replicas 1 → 3 [trigger source_pod_phase(Draining) @rv 1003, MISSED window]"
    ]
    assert cs_rows[1].action and cs_rows[1].component == "chaos"


def test_a_write_that_changed_nothing_does_not_hide_the_change_it_points_at():
    """A no-op patch gets back the current rv, which belongs to the operator's own change."""
    b = HistoryBuilder.recorded()
    _bound_claim(b)
    deleting = b.at(2).edit("CNClaim", "X", lambda o: o["metadata"].update(deletionTimestamp="t"))
    b.action(
        "request_migration",
        "CNClaim",
        "X",
        params={"source": "A", "target": "B"},
        write_rv=deleting.rv,
        component="agent",
    )
    rows = build_rows(b.history(), [])
    assert "deletion requested" in _events(rows, "claim/X")
    assert "request migration pod/A → pod/B" in _events(rows, "claim/X")


def test_agent_retries_condense_and_split_at_the_claims_deletion():
    b = HistoryBuilder.recorded()
    _bound_claim(b)
    for offset in (5, 10, 15):
        b.at(offset).action(
            "request_migration", "CNClaim", "X", params={"source": "A", "target": "B"},
            component="agent", error="conflict" if offset == 15 else None,
        )  # fmt: skip
    b.at(16).edit("CNClaim", "X", lambda o: o["metadata"].update(deletionTimestamp="t"))
    for offset in (20, 25, 30, 35):
        b.at(offset).action(
            "request_migration", "CNClaim", "X", params={"source": "A", "target": "B"},
            component="agent",
        )  # fmt: skip
    rows = build_rows(b.history(), [])
    agent = [r for r in rows if r.component == "agent"]
    assert [r.event for r in agent] == [
        "request migration pod/A → pod/B",
        "agent retried migration 2 times, 10.0–15.0 s (1 failed, last: conflict)",
        "agent kept retrying migration of the deleting claim 4 times, 20.0–35.0 s",
    ]
    assert [r.count for r in agent] == [1, 2, 4]


# --------------------------------------------------------------------------
# operator log lines
# --------------------------------------------------------------------------


def test_finalize_lines_of_one_claim_collapse_into_one_row_despite_interleaving():
    b = HistoryBuilder.recorded()
    _bound_claim(b)
    _bound_claim(b, claim="Z", pod="B")
    for k in range(5):
        b.at(10 + 2 * k).log("finalize CNClaim", "X")
        b.log("skip reclaim, pod still claimed by other CNClaim", "X", pod="B", holder="Z")
        b.log("does not complete finalizing, retry", "X")
        b.log("start bind cn claim", "Y")  # interleaving rows of another object
        b.edit("Pod", "A", lambda o, k=k: o["metadata"]["labels"].update(n=str(k)))
    b.at(30).log("finalize CNClaim", "Z")
    b.log("resource finalizing complete, remove finalizer", "Z")
    rows = build_rows(b.history(), [])
    x_rows = [r for r in rows if r.object == "claim/X"]
    finalize = [r for r in x_rows if "Finalize" in r.event]
    assert [r.event for r in finalize] == [
        "Finalize retried 5 times, 10.0–18.0 s; skip reclaim pod/B (held by claim/Z) ×5"
    ]
    assert (finalize[0].offset, finalize[0].end_offset, finalize[0].count) == (10, 18, 15)
    assert _events(rows, "claim/Y") == ["bind attempted 5 times, 10.0–18.0 s"]
    assert _events(rows, "claim/Z")[-2:] == [
        "finalize CNClaim",
        "finalize complete, finalizer removed",
    ]


def test_log_lines_keep_their_key_fields():
    b = HistoryBuilder.recorded()
    _bound_claim(b)
    b.at(1).log("CN bind success", "X", **{"claimed CN": {"metadata": {"name": "A"}}})
    b.at(2).log("migrate claimed pod", "X", source="A", target="B")
    b.at(3).log("start draining source pod", "X", pod="A")
    b.at(4).log("sort claims to scale-in", "S9", sorted=[{"claim": {"metadata": {"name": "X"}}}])
    b.at(5).log("release pod label, pod claimed by other CNClaim", "X", pod="B", holder="Z")
    b.at(6).log("object is synced, reconcile will be triggered on next change or resync", "X")
    b.at(7).log("boom\nstack", "X", level="error", error="store not found in cache: u1")
    b.at(8).log("boom\nstack", "X", level="error", error="store not found in cache: u1")
    rows = build_rows(b.history(), [])
    logs = [r.event for r in rows if r.component == "operator"]
    assert logs == [
        "CN bind success: pod/A",
        "migrate claimed pod: pod/A → pod/B",
        "start draining source pod/A",
        "sort claims to scale-in: X",
        "finalize: release label of pod/B (held by claim/Z)",
        "error: store not found in cache: u1 ×2, 7.0–8.0 s",
    ]
    assert [r.object for r in rows if r.event.startswith("sort claims")] == ["claimset/S9"]


def test_a_library_loggers_name_is_not_taken_for_a_claim():
    # MatrixOne's clients inside the real operator log `name: hakeeper-client-backend` and no
    # namespace; a reconcile line names its namespace and object.
    b = HistoryBuilder.recorded()
    _bound_claim(b)
    b.namespace = ""
    b.at(1).log("read loop stopped", "hakeeper-client-backend", level="error", error="EOF")
    b.namespace = "ns"
    b.at(2).log("boom", "Y", level="error", error="store not found in cache: u1")
    rows = build_rows(b.history(), [])
    objects = {r.event: r.object for r in rows if r.component == "operator"}
    assert objects == {
        "error: EOF": "operator (hakeeper-client-backend)",
        "error: store not found in cache: u1": "claim/Y",
    }


# --------------------------------------------------------------------------
# violations and markers
# --------------------------------------------------------------------------


def test_first_violation_of_each_failed_invariant_gets_a_row_after_its_entry():
    b = HistoryBuilder.recorded()
    _bound_claim(b)
    relabel = b.at(3).edit(
        "Pod", "A", lambda o: o["metadata"]["labels"].update({CLAIMED_BY_LABEL: "Q"})
    )
    b.at(4).marker("settled")
    verdicts = [
        Verdict(
            "no-label-residue",
            "fail",
            violation=Violation(t=relabel.t, seq=relabel.seq, objects=("Pod/A",), message="no Q"),
        ),
        Verdict(
            "no-label-residue",
            "fail",
            violation=Violation(t=relabel.t, seq=1, objects=(), message="again"),
        ),
        Verdict("single-binding", "pass"),
        Verdict("retry-budget", "fail", note="hot loop"),
    ]
    rows = build_rows(b.history(), verdicts)
    flagged = [r for r in rows if r.violation]
    assert [(r.object, r.event) for r in flagged] == [
        ("pod/A", "VIOLATION no-label-residue: no Q"),
        ("–", "VIOLATION retry-budget: hot loop"),
    ]
    events = [r.event for r in rows]
    assert events.index("claimed-by=Q") + 1 == events.index("VIOLATION no-label-residue: no Q")
    assert events[-2:] == ["settled: final checks", "VIOLATION retry-budget: hot loop"]


def test_seed_race_reads_like_the_bug_report(seed_history, seed_result):
    events = [r.event for r in build_rows(seed_history, seed_result.verdicts)]
    story = [
        "bound to pod/A",
        "request migration pod/A → pod/B",
        "start draining source pod/A",
        "scale replicas 2 → 1",
        "sort claims to scale-in: X, Y",
        "Finalize retried 40 times",
        "agent kept retrying migration of the deleting claim 16 times",
        "VIOLATION finalizer-completes",
    ]
    positions = [next(i for i, e in enumerate(events) if e.startswith(s)) for s in story]
    assert positions == sorted(positions)


# --------------------------------------------------------------------------
# markdown
# --------------------------------------------------------------------------


def test_markdown_marks_actions_and_violations_and_escapes_cells():
    b = HistoryBuilder.recorded()
    _bound_claim(b)
    b.at(1).action("remove_label", "Pod", "A", params={"key": "a|b"})
    rows = build_rows(b.history(), [Verdict("x", "fail", note="bad")])
    md = render_markdown(rows, title="T", meta={"operator": "model:fixed"})
    assert md.startswith("# T\n\n- **operator**: model:fixed\n")
    assert "| 11:20:01.000 | 1.0 | chaos | pod/A | ⚡ **remove label a\\|b** |" in md
    assert "❌ **VIOLATION x: bad**" in md
    assert "(2026-05-30 11:20:00 UTC)" in md


def test_markdown_of_an_empty_history():
    md = render_markdown(build_rows(History(), []), title="T", meta={})
    assert "(no events recorded)" in md


# --------------------------------------------------------------------------
# golden files: data/<name>.history.jsonl[.gz] + <name>.case.json -> <name>.timeline.md
# --------------------------------------------------------------------------

CASES = sorted(p.name.removesuffix(".case.json") for p in DATA.glob("*.case.json"))


@pytest.mark.parametrize("name", CASES)
def test_golden_timeline(name):
    """Set MOCHAOS_UPDATE_GOLDEN=1 to rewrite the expected files after a deliberate change."""
    case = json.loads((DATA / f"{name}.case.json").read_text(encoding="utf-8"))
    plain = DATA / f"{name}.history.jsonl"
    history = History.from_jsonl(plain if plain.exists() else plain.with_name(plain.name + ".gz"))
    verdicts = ScenarioResult.from_dict(case["result"]).verdicts
    rendered = render_markdown(
        build_rows(history, verdicts), title=case["title"], meta=case["meta"]
    )
    expected = DATA / f"{name}.timeline.md"
    if os.environ.get("MOCHAOS_UPDATE_GOLDEN") == "1":
        expected.write_text(rendered, encoding="utf-8")
    assert rendered == expected.read_text(encoding="utf-8")


def test_golden_cases_exist():
    # seed_race is hand-written; seed_upstream_captured was recorded from a real run of the
    # seed scenario on the local cluster against model:upstream (--time-scale 0.2).
    assert {"seed_race", "seed_upstream_captured"} <= set(CASES)


def test_the_real_operators_object_reference_names_the_bound_pod():
    b = HistoryBuilder.recorded()
    _bound_claim(b)
    ref = {"apiVersion": "v1", "kind": "Pod", "namespace": "ns", "name": "A"}
    b.at(1).log("CN bind success", "X", **{"claimed CN": ref})
    rows = build_rows(b.history(), [])
    assert [r.event for r in rows if r.component == "operator"] == ["CN bind success: pod/A"]


def test_the_pause_faults_window_shows_from_the_freeze_period():
    b = HistoryBuilder.recorded()
    b.at(10).action("pause_operator", "Operator", "operator", params={"seconds": 5.0},
                    fault="pause")  # fmt: skip
    b.at(10.1).period(OPERATOR_FREEZE, "start", "42", "SIGSTOP")
    b.at(15.2).period(OPERATOR_FREEZE, "end", "42")
    rows = build_rows(b.history(), [])
    assert _events(rows) == [
        "pause operator for 5.0 s",
        "operator process 42 stopped (SIGSTOP)",
        "operator process 42 running again after 5.1s",
    ]


def test_each_end_of_a_period_is_a_row_in_its_kinds_words():
    b = HistoryBuilder.recorded()
    b.at(1).period(APISERVER_OUTAGE, "start", "apiserver")
    b.at(2).period(DEPENDENCY_OUTAGE, "start", "matrixone", "not running")
    b.at(5.5).period(APISERVER_OUTAGE, "end", "apiserver")
    b.at(8).period(DEPENDENCY_OUTAGE, "end", "matrixone")
    b.at(9).period(DEPENDENCY_OUTAGE, "end", "kruise")  # its start not recorded
    rows = build_rows(b.history(), [])
    assert [(r.component, r.event) for r in rows] == [
        ("cluster", "apiserver unavailable"),
        ("cluster", "dependency matrixone unavailable (not running)"),
        ("cluster", "apiserver available again after 4.5s"),
        ("cluster", "dependency matrixone available again after 6.0s"),
        ("cluster", "dependency kruise available again after ?s"),
    ]


def test_a_matrixone_fault_shows_as_the_scenarios_action_and_its_own_period():
    b = HistoryBuilder()
    b.at(20).period(MATRIXONE_FAULT, "start", "hakeeper", "hang")
    b.at(20).action("hakeeper_down", "MatrixOne", "hakeeper", fault="hakeeper-down",
                    params={"seconds": 30.0, "how": "hang", "at": "127.144.0.2:32001"})  # fmt: skip
    b.at(50).period(MATRIXONE_FAULT, "end", "hakeeper")
    b.at(50).action("restore_matrixone", "MatrixOne", "hakeeper",
                    params={"fault": "hakeeper-down", "component": "hakeeper"})  # fmt: skip
    rows = build_rows(b.history(), [])
    assert [(r.object, r.event, r.action) for r in rows] == [
        ("matrixone/hakeeper", "MatrixOne's hakeeper made unreachable by the scenario (hang)",
         False),
        ("matrixone/hakeeper", "make MatrixOne's HAKeeper unreachable (hang) for 30 s", True),
        ("matrixone/hakeeper", "MatrixOne's hakeeper reachable again after 30.0s", False),
        ("matrixone/hakeeper", "make MatrixOne's hakeeper reachable again", True),
    ]  # fmt: skip
    query = HistoryBuilder()
    query.at(1).action("query_down", "Pod", "pool-cn-1", fault="query-down",
                       params={"how": "refuse"})  # fmt: skip
    (row,) = build_rows(query.history(), [])
    assert (row.object, row.event) == (
        "pod/pool-cn-1", "make the CN's query service unreachable (refuse) until released",
    )  # fmt: skip
