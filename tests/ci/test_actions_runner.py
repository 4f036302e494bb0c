"""The stand-in Actions runner runs steps as GitHub does: order, matrix, env, if:, artifacts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .actions import Runner

TOY = """
on: push
defaults:
  run:
    shell: bash
env:
  GREETING: hello
jobs:
  build:
    runs-on: ubuntu-24.04
    strategy:
      matrix:
        part: [a, b]
    env:
      PART: ${{ matrix.part }}/${{ strategy.job-total }}
    steps:
      - name: write
        run: |
          mkdir out && echo "$GREETING $PART $LATER" > out/part.txt
          echo "LATER=x" >> "$GITHUB_ENV"
      - name: read GITHUB_ENV
        run: test "$LATER" = x
      - uses: actions/upload-artifact@v4
        with:
          name: part-${{ matrix.part }}
          path: out/
  gather:
    needs: build
    runs-on: ubuntu-24.04
    steps:
      - uses: actions/cache/restore@v4
        with:
          path: kept
          key: kept-${{ github.run_id }}
          restore-keys: kept-
      - uses: actions/download-artifact@v4
        with:
          pattern: part-*
          path: parts
      - name: fail
        run: cat parts/*/part.txt > all.txt; mkdir -p kept; cat all.txt >> kept/log; false
      - name: skipped after a failure
        run: echo never
      - name: always
        if: always()
        run: echo "ran anyway"
      - uses: actions/cache/save@v4
        if: always()
        with:
          path: kept
          key: kept-${{ github.run_id }}
"""


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    return Runner(tmp_path / "runner", base_env={"PATH": os.environ["PATH"]},
                  overrides={"GREETING": "hi"})  # fmt: skip


def test_jobs_steps_and_artifacts_follow_the_workflow(tmp_path: Path, runner: Runner):
    workflow = tmp_path / "toy.yml"
    workflow.write_text(TOY)
    jobs = runner.run(workflow, run_id="1")
    assert [j.name for j in jobs] == ["build", "build", "gather"]
    assert [(s.name, s.kind, s.returncode) for s in jobs[2].steps] == [
        ("actions/cache/restore@v4", "uses", 0), ("actions/download-artifact@v4", "uses", 0),
        ("fail", "run", 1), ("skipped after a failure", "skipped", 0), ("always", "run", 0),
        ("actions/cache/save@v4", "uses", 0),
    ]  # fmt: skip
    assert (jobs[2].workspace / "all.txt").read_text() == "hi a/2 \nhi b/2 \n"
    assert not jobs[0].failed and jobs[2].failed
    # The next run restores what the last one saved (by the restore-keys prefix).
    again = runner.run(workflow, run_id="2")
    assert (again[2].workspace / "kept" / "log").read_text().count("hi a/2") == 2


def test_expressions_it_cannot_evaluate_fail_the_test(tmp_path: Path, runner: Runner):
    workflow = tmp_path / "bad.yml"
    workflow.write_text(TOY.replace("${{ matrix.part }}/", "${{ fromJSON(matrix.part) }}/"))
    with pytest.raises(AssertionError, match="is not evaluated here"):
        runner.run(workflow, run_id="1")
