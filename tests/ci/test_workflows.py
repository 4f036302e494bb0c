"""The workflows mo-chaos ships for the operator's CI, read and then run as written.

The structure tests read the files (what a reviewer checks). The run tests execute every
``run:`` step in order with the stand-in runner (tests/ci/actions.py) on the reference
model: the environment variables the workflows read name a model profile and a short
selection, nothing else differs from what GitHub runs. The pull-request workflow's two
shards of the main job, merged, hold exactly the shards' verdicts and violated invariants,
and the outcomes of one unsharded run; the violated invariants of two independent runs are
not compared, since a scenario's may differ between runs (seen once, at a load of ~17 on
two cores: the ``source-reclaimed`` sweep without ``scalein-skips-migrating``). The
nightly workflow, run on two nights, qualifies the newest build against the last good one
and keeps the history.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mochaos import __version__
from mochaos.report import build_history as history
from mochaos.report.child_pytest import run_pytest
from mochaos.report.junit import read_junit
from mochaos.report.merge import verdict_table
from mochaos.suites import SEED

from .actions import JobRun, Runner

ROOT = Path(__file__).resolve().parents[2]
PR = ROOT / "docs" / "ci" / "github" / "mo-chaos.yml"
NIGHTLY = ROOT / "docs" / "ci" / "github" / "mo-chaos-nightly.yml"
GITLAB = ROOT / "docs" / "ci" / "gitlab-ci.yml"
MAIN_JOB = "scalein_during_migration"
TIME_SCALE = "0.2"
"""The model's intervals shrunk 5×, so a scenario takes seconds instead of minutes."""
CACHED = ("~/.cache/mochaos", "~/go/pkg/mod", "~/.cache/go-build")


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def steps(workflow: dict[str, Any], job: str) -> list[dict[str, Any]]:
    return workflow["jobs"][job]["steps"]


def step_labels(workflow: dict[str, Any], job: str) -> list[str]:
    return [s.get("name") or s["uses"] for s in steps(workflow, job)]


def uses(workflow: dict[str, Any], job: str, action: str) -> list[dict[str, Any]]:
    return [s for s in steps(workflow, job) if str(s.get("uses", "")).startswith(action + "@")]


def test_the_workflows_pin_the_mo_chaos_they_were_run_with():
    for path in (PR, NIGHTLY):
        env = load(path)["env"]
        assert env["MOCHAOS_VERSION"] == __version__, path
        assert env["MOCHAOS_PACKAGE"] == f"mo-chaos=={__version__}", path


@pytest.mark.parametrize("path", [PR, NIGHTLY], ids=["pull-request", "nightly"])
def test_caches_are_keyed_by_mo_chaos_and_go_versions(path: Path):
    workflow = load(path)
    job = next(iter(workflow["jobs"]))
    (cache,) = uses(workflow, job, "actions/cache")
    assert cache["with"]["path"].split() == list(CACHED)
    key = cache["with"]["key"]
    assert "${{ env.MOCHAOS_VERSION }}" in key and "${{ steps.go.outputs.go-version }}" in key
    (go,) = uses(workflow, job, "actions/setup-go")
    assert go["id"] == "go" and go["with"]["cache"] is False  # one cache, ours


def test_the_pull_request_workflow_tests_the_pull_request():
    workflow = load(PR)
    assert "pull_request" in workflow["on"]
    assert workflow["env"]["MOCHAOS_OPERATOR"] == "source:."
    chaos = workflow["jobs"]["chaos"]
    assert chaos["env"]["MOCHAOS_SHARD"] == "${{ matrix.shard }}/${{ strategy.job-total }}"
    (upload,) = uses(workflow, "chaos", "actions/upload-artifact")
    assert upload["if"] == "always()" and upload["with"]["path"] == "reports/"
    report = workflow["jobs"]["report"]
    assert report["needs"] == "chaos" and report["if"] == "always()"
    (junit,) = uses(workflow, "report", "mikepenz/action-junit-report")
    assert junit["with"]["report_paths"] == "merged/junit.xml" and junit["if"] == "always()"


def test_the_nightly_workflow_keeps_its_history_between_nights():
    workflow = load(NIGHTLY)
    assert workflow["on"]["schedule"] and "workflow_dispatch" in workflow["on"]
    (restore,) = uses(workflow, "qualify", "actions/cache/restore")
    (save,) = uses(workflow, "qualify", "actions/cache/save")
    assert restore["with"]["path"] == save["with"]["path"] == "history"
    assert save["if"] == "always()" and restore["with"]["restore-keys"] == "mochaos-history-"


def test_the_gitlab_snippet_shards_merges_and_reports_junit():
    ci = yaml.safe_load(GITLAB.read_text())
    chaos, report = ci["mo-chaos"], ci["mo-chaos-report"]
    assert chaos["parallel"] >= 2
    assert chaos["variables"]["MOCHAOS_SHARD"] == "$CI_NODE_INDEX/$CI_NODE_TOTAL"
    assert any("pytest --pyargs mochaos.suites" in line for line in chaos["script"])
    assert chaos["artifacts"]["when"] == "always"
    assert report["needs"] == ["mo-chaos"] and report["when"] == "always"
    assert any("python -m mochaos merge" in line for line in report["script"])
    assert report["artifacts"]["reports"]["junit"] == "merged/junit.xml"
    assert ci["variables"]["XDG_CACHE_HOME"] == "$CI_PROJECT_DIR/.cache"
    assert ".cache/mochaos/" in ci["default"]["cache"]["paths"]
    assert ci["variables"]["MOCHAOS_PACKAGE"] == f"mo-chaos=={__version__}"


# -- the workflows run ------------------------------------------------------------------


def base_env() -> dict[str, str]:
    """This machine as a runner: our interpreter's bin first on PATH (setup-python's part)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "MOCHAOS_", "KUBECONFIG"))}  # fmt: skip
    for keep in ("MOCHAOS_STATE", "MOCHAOS_CACHE"):
        if keep in os.environ:
            env[keep] = os.environ[keep]
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def assert_ran_as_written(jobs: list[JobRun], workflow: dict[str, Any], names: dict[str, str]):
    """Every job ran every step in the workflow's order; every run: step was executed."""
    for job in jobs:
        job_id = names[job.name]
        assert [s.name for s in job.steps] == step_labels(workflow, job_id), job.name
        for step, spec in zip(job.steps, steps(workflow, job_id), strict=True):
            if "run" in spec:
                assert step.kind == "run", (job.name, step.name, step.kind)


def outputs(job: JobRun) -> str:
    return "\n".join(f"--- {s.name} (exit {s.returncode})\n{s.output[-3000:]}" for s in job.steps)


def test_the_pull_request_workflow_merged_equals_one_run(tmp_path: Path):
    overrides = {"MOCHAOS_OPERATOR": "model:upstream", "MOCHAOS_SELECTION": MAIN_JOB,
                 "MOCHAOS_TIME_SCALE": TIME_SCALE}  # fmt: skip
    runner = Runner(tmp_path / "github", base_env=base_env(), overrides=overrides)
    jobs = runner.run(PR, run_id="1")
    names = {"chaos (shard 1)": "chaos", "chaos (shard 2)": "chaos", "report": "report"}
    assert [j.name for j in jobs] == list(names)
    assert_ran_as_written(jobs, load(PR), names)
    shards = [
        {t["nodeid"] for t in json.loads(p.read_text())["tests"]}
        for j in jobs[:2] for p in (j.workspace / "reports").glob("2*/summary.json")
    ]  # fmt: skip
    assert len(shards) == 2 and all(shards), [outputs(j) for j in jobs[:2]]
    assert not shards[0] & shards[1]
    report = jobs[2]
    merge = next(s for s in report.steps if s.name == "Merge the shards into one run")
    assert merge.returncode == 1, outputs(report)  # model:upstream fails the main job
    merged = report.workspace / "merged"
    assert len(read_junit(merged / "junit.xml")) == len(shards[0] | shards[1])

    one = tmp_path / "one"
    env = dict(base_env(), **overrides)
    run = run_pytest(
        ["--pyargs", "mochaos.suites", "-k", MAIN_JOB, "--mochaos-reports-dir", str(one),
         "-p", "no:cacheprovider"],
        reports_dir=one, cwd=tmp_path, env=env, capture=True, timeout=1500,
    )  # fmt: skip
    assert run.exit_code == 1, run.output[-6000:]
    merged_table, one_table = verdict_table(merged), verdict_table(one / "latest")
    own = {}
    for job in jobs[:2]:
        (run,) = (job.workspace / "reports").glob("2*/")
        own |= verdict_table(run)
    assert merged_table == own  # the merge kept each shard's verdicts and invariants
    assert {n: v[0] for n, v in merged_table.items()} == {n: v[0] for n, v in one_table.items()}


def test_the_nightly_workflow_qualifies_the_newest_against_the_last_good(tmp_path: Path):
    runner = Runner(tmp_path / "github", base_env=base_env(), overrides={})
    nights = {}
    for night, target in (("1", "model:fixed"), ("2", "model:upstream")):
        runner.overrides = {"MOCHAOS_NIGHTLY_TARGET": target, "MOCHAOS_SELECTION": SEED,
                            "MOCHAOS_REPEAT": "1", "MOCHAOS_TIME_SCALE": TIME_SCALE}  # fmt: skip
        (job,) = runner.run(NIGHTLY, run_id=night)
        assert_ran_as_written([job], load(NIGHTLY), {"qualify": "qualify"})
        nights[night] = job
    qualify = "Qualify the newest build against the last good one"
    first = {s.name: s for s in nights["1"].steps}
    assert first[qualify].returncode == 0, outputs(nights["1"])
    second = {s.name: s for s in nights["2"].steps}
    assert second[qualify].returncode == 1, outputs(nights["2"])  # the newest fails
    assert list((nights["2"].workspace / "reports").glob("compare-*/comparison.md"))
    store = nights["2"].workspace / "history"
    records = history.load(store)
    assert [r["target"] for r in records] == ["model:fixed", "model:upstream", "model:fixed"]
    columns = history.builds(records)
    assert [b.build for b in columns] == ["model-fixed", "model-upstream"]
    assert history.changes(columns).regressed == [
        "test_scalein_during_migration.py::test_scalein_during_migration"
    ]
    grid = (store / "grid.html").read_text()
    assert 'data-build="model-upstream"' in grid and 'class="row flagged"' in grid
    # What the night uploaded and saved for the next one.
    kept = tmp_path / "github" / "run-2" / "artifacts" / "mochaos-nightly"
    assert (kept / "history" / "grid.html").is_file() and (kept / "reports").is_dir()
    assert (tmp_path / "github" / "cache" / "mochaos-history-2" / "history" / "runs").is_dir()
