"""How many scenarios run at once when the suites are collected and no -n is given."""

from __future__ import annotations

from mochaos.config import DEFAULT_WORKERS, KIND_WORKERS, default_workers

pytest_plugins = ["pytester"]


def test_kind_runs_fewer_at_once_than_the_local_cluster() -> None:
    assert default_workers("kind") == KIND_WORKERS < DEFAULT_WORKERS
    assert default_workers("local") == default_workers("existing") == DEFAULT_WORKERS


def test_the_suites_on_kind_start_the_kind_default_of_workers(pytester) -> None:
    # Each kind scenario runs real MatrixOne pods: two at a time unless --mochaos-workers.
    result = pytester.runpytest_subprocess(
        "--pyargs", "mochaos.suites", "--mochaos-cluster=kind", "-k", "no_such_scenario"
    )
    result.stdout.fnmatch_lines([f"*{KIND_WORKERS} workers*"])
