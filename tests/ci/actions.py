"""A stand-in for the GitHub Actions runner: runs a workflow's ``run:`` steps as written.

For the one purpose of executing the workflows mo-chaos ships (docs/ci/github/) on this
machine: jobs in ``needs`` order, the matrix expanded, each job in a fresh workspace (its
own machine on GitHub), ``run:`` steps in ``bash --noprofile --norc -eo pipefail`` with the
workflow's, job's and step's ``env``, ``GITHUB_ENV``, and ``if:`` success() / always() /
failure(). ``${{ }}`` is evaluated only as a dotted name (matrix, strategy, env, github,
runner); anything else fails the test. Of the ``uses:`` steps, upload/download-artifact and
cache/restore/save move folders between jobs and runs as those actions do (a folder store
stands for GitHub's, and an uploaded folder's symlinks are followed, as the upload action
does); the others (checkout, setup-python, setup-go, cache, the JUnit publisher) are what
this machine provides already, and are recorded as skipped. Environment variables the test
passes as ``overrides`` replace the workflow's values of the same name.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

STEP_TIMEOUT = 1500.0
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
EMULATED = ("actions/upload-artifact", "actions/download-artifact", "actions/cache/restore",
            "actions/cache/save")  # fmt: skip
PROVIDED = ("actions/checkout", "actions/setup-python", "actions/setup-go", "actions/cache",
            "mikepenz/action-junit-report")  # fmt: skip


@dataclass
class StepRun:
    """One step of one job as it was run (or skipped)."""

    job: str
    name: str
    kind: str
    """``run``, ``uses`` (emulated), ``provided`` (a no-op here) or ``skipped`` (by its if:)."""
    returncode: int = 0
    output: str = ""


@dataclass
class JobRun:
    """One job (one matrix entry) and its workspace."""

    name: str
    workspace: Path
    env: dict[str, str]
    steps: list[StepRun] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """Whether a step failed."""
        return any(s.returncode != 0 for s in self.steps)


class Runner:
    """Runs workflows under ``root``; the artifact store is per run, the cache store kept."""

    def __init__(self, root: Path, *, base_env: dict[str, str], overrides: dict[str, str]):
        self.root = root
        self.base_env = base_env
        self.overrides = overrides
        self.cache = root / "cache"

    def run(self, workflow: Path, *, run_id: str) -> list[JobRun]:
        """Run every job of ``workflow`` as run ``run_id``; the jobs in the order they ran."""
        spec = yaml.safe_load(workflow.read_text(encoding="utf-8"))
        shell = spec.get("defaults", {}).get("run", {}).get("shell", "bash")
        assert shell == "bash", f"{workflow}: only the bash shell is run here"
        artifacts = self.root / f"run-{run_id}" / "artifacts"
        done: dict[str, list[JobRun]] = {}
        for job_id in _job_order(spec["jobs"]):
            job = spec["jobs"][job_id]
            needs = (
                [job.get("needs")] if isinstance(job.get("needs"), str) else job.get("needs", [])
            )
            needs_ok = all(not j.failed for n in needs for j in done[n])
            if not needs_ok and job.get("if") != "always()":
                done[job_id] = []
                continue
            done[job_id] = [
                self._job(spec, job_id, job, matrix, index, total, artifacts, run_id)
                for index, total, matrix in _matrix(job)
            ]
        return [j for jobs in done.values() for j in jobs]

    def _job(self, spec: dict[str, Any], job_id: str, job: dict[str, Any],
             matrix: dict[str, Any], index: int, total: int, artifacts: Path,
             run_id: str) -> JobRun:  # fmt: skip
        suffix = "-".join(str(v) for v in matrix.values())
        workspace = (
            self.root / f"run-{run_id}" / "jobs" / f"{job_id}{'-' + suffix if suffix else ''}"
        )
        workspace.mkdir(parents=True)
        github_env = workspace.parent / f"{workspace.name}.env"
        github_env.write_text("")
        ctx: dict[str, Any] = {
            "matrix": matrix, "strategy": {"job-index": index, "job-total": total},
            "github": {"run_id": run_id, "workspace": str(workspace), "ref": "refs/pull/1/merge"},
            "runner": {"os": "Linux"}, "env": {},
        }  # fmt: skip
        env = dict(self.base_env, CI="true", GITHUB_ACTIONS="true",
                   GITHUB_WORKSPACE=str(workspace), GITHUB_ENV=str(github_env))  # fmt: skip
        for scope in (spec.get("env", {}), job.get("env", {})):
            for key, value in scope.items():
                env[key] = ctx["env"][key] = _evaluate(str(value), ctx)
        name = _evaluate(str(job.get("name", job_id)), ctx)
        run = JobRun(name, workspace, env)
        for i, step in enumerate(job["steps"]):
            label = step.get("name") or step.get("uses") or f"step {i + 1}"
            if not _should_run(step.get("if"), run.failed):
                run.steps.append(StepRun(name, label, "skipped"))
                continue
            step_env = dict(env, **_read_github_env(github_env))
            for key, value in step.get("env", {}).items():
                step_env[key] = _evaluate(str(value), ctx)
            step_env.update(self.overrides)
            ctx["env"] = step_env
            if "run" in step:
                run.steps.append(self._run_step(name, label, step["run"], workspace, step_env))
            else:
                run.steps.append(self._uses(name, label, step, workspace, artifacts, ctx))
        return run

    def _run_step(self, job: str, label: str, script: str, workspace: Path,
                  env: dict[str, str]) -> StepRun:  # fmt: skip
        assert "${{" not in script, f"{label}: an expression in a run: script ({script!r})"
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=workspace,
            env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        return StepRun(job, label, "run", proc.returncode, proc.stdout + proc.stderr)

    def _uses(self, job: str, label: str, step: dict[str, Any], workspace: Path,
              artifacts: Path, ctx: dict[str, Any]) -> StepRun:  # fmt: skip
        action = str(step["uses"]).partition("@")[0]
        if action in PROVIDED:
            return StepRun(job, label, "provided")
        assert action in EMULATED, f"{label}: {action} is neither emulated nor provided here"
        w = {k: _evaluate(str(v), ctx) for k, v in step.get("with", {}).items()}
        paths = [p.strip() for p in w.get("path", "").splitlines() if p.strip()]
        if action == "actions/upload-artifact":
            _upload(workspace, paths, artifacts / w["name"])
        elif action == "actions/download-artifact":
            dest = workspace / paths[0]
            for found in sorted(artifacts.glob("*")):
                if fnmatch.fnmatch(found.name, w["pattern"]):
                    shutil.copytree(found, dest / found.name, symlinks=True)
        elif action == "actions/cache/restore":
            keys = [w["key"], *[k.strip() for k in w.get("restore-keys", "").splitlines()]]
            hit = next((c for k in keys for c in sorted(self.cache.glob("*"), reverse=True)
                        if c.name == k or c.name.startswith(k)), None)  # fmt: skip
            if hit is not None:
                shutil.copytree(hit, workspace, dirs_exist_ok=True, symlinks=True)
        else:  # actions/cache/save: a key is written once
            entry = self.cache / w["key"]
            for path in paths if not entry.exists() else ():
                if (workspace / path).is_dir():  # kept where it was, as the cache action does
                    shutil.copytree(workspace / path, entry / path, symlinks=True)
        return StepRun(job, label, "uses")


def _upload(workspace: Path, paths: list[str], dest: Path) -> None:
    """Copy ``paths`` as the upload action stores them: a single folder's contents, else
    relative to the paths' least common ancestor."""
    found = [workspace / p for p in paths if (workspace / p).exists()]
    if len(found) == 1:
        base = found[0] if found[0].is_dir() else found[0].parent
    elif found:
        base = Path(os.path.commonpath([str(p) for p in found]))
    for p in found:
        target = dest / p.relative_to(base)
        if p.is_dir():
            shutil.copytree(p, target, symlinks=False, dirs_exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, target)


def _job_order(jobs: dict[str, Any]) -> list[str]:
    order: list[str] = []
    while len(order) < len(jobs):
        for job_id, job in jobs.items():
            needs = job.get("needs", [])
            needs = [needs] if isinstance(needs, str) else needs
            if job_id not in order and all(n in order for n in needs):
                order.append(job_id)
                break
        else:
            raise AssertionError(f"jobs with unmet needs: {set(jobs) - set(order)}")
    return order


def _matrix(job: dict[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    matrix = job.get("strategy", {}).get("matrix", {})
    assert not {"include", "exclude"} & set(matrix), "matrix include/exclude is not run here"
    combos = [dict(zip(matrix, values, strict=True)) for values in
              itertools.product(*matrix.values())] or [{}]  # fmt: skip
    return [(i, len(combos), combo) for i, combo in enumerate(combos)]


def _evaluate(text: str, ctx: dict[str, Any]) -> str:
    def one(m: re.Match[str]) -> str:
        expr = m.group(1)
        assert _NAME.match(expr), f"expression {expr!r} is not evaluated here"
        value: Any = ctx
        for part in expr.split("."):
            assert isinstance(value, dict) and part in value, f"{expr!r}: no {part!r}"
            value = value[part]
        return str(value)

    return _EXPR.sub(one, text)


def _should_run(condition: str | None, failed: bool) -> bool:
    if condition in (None, "success()"):
        return not failed
    if condition == "always()":
        return True
    if condition == "failure()":
        return failed
    raise AssertionError(f"if: {condition!r} is not evaluated here")


def _read_github_env(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        assert "<<" not in line, "multi-line GITHUB_ENV values are not read here"
        key, sep, value = line.partition("=")
        if sep:
            values[key] = value
    return values
