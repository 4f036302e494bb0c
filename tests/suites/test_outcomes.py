"""The required outcomes of the suites, per model profile (issue: scenario engine).

Each test runs the real suites in a child pytest against the local cluster and
the reference model with its intervals shrunk (--time-scale 0.2), then reads the
JUnit file and the report folder exactly as CI and a postmortem reader would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos.invariants import ALL
from mochaos.observe.history import History

SEED = "test_scalein_during_migration and not race and not sweep"
WINDOW = 60 * 0.2
"""The finalize window (60 s of operator time) in wall seconds at the shrunk scale."""


def _max_in_window(history: History, msg: str, name: str, window: float) -> int:
    times = sorted(r.t for r in history.logs(msg) if r.name == name)
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while t - times[lo] > window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def _test_folder(reports: Path, test: str) -> Path:
    folders = [p for p in (reports / "latest").iterdir() if p.name.endswith(f".{test}")]
    assert len(folders) == 1, folders
    return folders[0]


def test_seed_on_upstream_fails_with_the_bug_report_violations(suites):
    run = suites("-k", SEED, "--operator", "model:upstream")
    assert run.exit_code == 1, run.output[-3000:]
    case = run.case("test_scalein_during_migration")
    props = case.properties
    for inv in ("finalizer-completes", "no-label-residue", "scalein-skips-migrating"):
        assert props[f"invariant.{inv}"] == "fail", props
    assert props["operator.target"] == "model:upstream"
    assert props["cluster.provider"] == "local"
    assert props["cluster.k8s_version"].startswith("v1.")
    assert {"B1", "B2", "B5"} <= set(props["bugs"].split(","))
    assert int(props["agent.migration_retries"]) > 0
    assert props["audit.agent.patches.agree"] == "1"
    stuck = max(
        (k.removeprefix("retries.finalize.") for k in props if k.startswith("retries.finalize.")
         and k != "retries.finalize.max"),
        key=lambda c: int(props[f"retries.finalize.{c}"]),
    )  # fmt: skip
    folder = _test_folder(run.reports_dir, "test_scalein_during_migration")
    history = History.from_jsonl(folder / "history.jsonl")
    assert _max_in_window(history, "finalize CNClaim", stuck, WINDOW) >= 20
    # The failure message's first line names invariants, bugs and retry counts; the next
    # lines name each violation's objects.
    first, *rest = f"{case.message}\n{case.text}".strip().splitlines()
    assert "finalizer-completes" in first and "B1" in first, first
    assert "finalize retries max" in first and stuck in first, first
    assert any(f"CNClaim/{stuck}" in line for line in rest[:6]), rest[:6]
    # The timeline tells the bug report's story, with our chaos marked.
    timeline = (folder / "timeline.md").read_text()
    for needle in (
        "request migration",
        "start draining source",
        "scale replicas 2 → 1",
        "sort claims to scale-in",
        "Finalize retried",
        "VIOLATION finalizer-completes",
    ):
        assert needle in timeline, needle  # fmt: skip


def test_seed_on_fixed_passes_with_every_invariant_green(suites):
    run = suites("-k", SEED, "--operator", "model:fixed")
    assert run.exit_code == 0, run.output[-3000:]
    props = run.case("test_scalein_during_migration").properties
    statuses = {k: v for k, v in props.items() if k.startswith("invariant.")}
    assert len(statuses) == len(ALL) and set(statuses.values()) == {"pass"}, statuses
    assert int(props["retries.finalize.max"]) <= 3


def test_seed_on_pr592_finalizes_but_leaks_the_shared_pod(suites):
    """The prediction of docs/bugs.md#pr592-leak: PR #592 unlabels the holder's pod, which
    then leaks."""
    run = suites("-k", SEED, "--operator", "model:pr592")
    props = run.case("test_scalein_during_migration").properties
    assert props["invariant.finalizer-completes"] == "pass"
    assert props["invariant.scalein-skips-migrating"] == "pass"
    assert props["invariant.pod-claim-agreement"] == "fail"
    assert props["invariant.no-leaked-pods"] == "fail"
    assert run.exit_code == 1


@pytest.mark.parametrize(("profile", "exit_code"), [("pre-587", 1), ("upstream", 0)])
def test_double_binding_needs_the_587_index(suites, profile, exit_code):
    run = suites("-k", "test_double_binding_during_migration", "--operator", f"model:{profile}")
    assert run.exit_code == exit_code, run.output[-3000:]
    props = run.case("test_double_binding_during_migration").properties
    assert props["invariant.single-binding"] == ("fail" if exit_code else "pass")


def test_sweep_gives_each_phase_its_own_verdict(suites):
    run = suites("-k", "sweep", "--operator", "model:upstream", "-n", "2")
    phases = ("target-bound", "source-draining", "source-reclaimed", "completed")
    verdicts = {p: run.case(f"test_scalein_during_migration_sweep[{p}]").outcome for p in phases}
    assert verdicts["source-draining"] == "failure", verdicts
    assert set(verdicts.values()) <= {"passed", "failure"}, verdicts


TARGET_LOSS = "test_delete_target_pod_during_migration"
TARGET_LOSS_VIOLATIONS = {
    "pre-587": ("bound-has-pod", "migration-completes"),
    "upstream": ("bound-has-pod", "migration-completes"),
    "pr592": ("migration-completes",),
    "fixed": (),
}
"""The invariants the target-loss scenario violates per profile (docs/writing-scenarios.md
shows the same table; its run on model:fixed is tests/docs/test_docs_run.py's)."""


def test_target_loss_table_in_the_docs_is_the_required_one():
    page = (Path(__file__).resolve().parents[2] / "docs" / "writing-scenarios.md").read_text()
    table = page.split(f"<!-- outcomes: {TARGET_LOSS} -->\n", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines()[2:]:
        profile, verdict, violated = (c.strip(" `") for c in line.strip("|").split("|"))
        rows[profile] = (verdict, tuple(v.strip() for v in violated.split(",") if v != "–"))
    assert rows == {p: ("failed" if v else "passed", v) for p, v in TARGET_LOSS_VIOLATIONS.items()}


@pytest.mark.parametrize("profile", [p for p, v in TARGET_LOSS_VIOLATIONS.items() if v])
def test_target_loss_fails_where_the_migration_outlives_its_target(suites, profile):
    run = suites("-k", TARGET_LOSS, "--operator", f"model:{profile}")
    assert run.exit_code == 1, run.output[-3000:]
    props = run.case(TARGET_LOSS).properties
    failed = {k.removeprefix("invariant.") for k, v in props.items() if v == "fail"}
    assert failed == set(TARGET_LOSS_VIOLATIONS[profile]), props
