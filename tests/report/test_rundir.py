"""Run folders, the latest link, and per-test folder names."""

import os
import re

import pytest

from mochaos.errors import UsageError
from mochaos.report import rundir


def test_run_ids_sort_by_time_and_are_unique():
    ids = {rundir.new_run_id() for _ in range(50)}
    assert len(ids) == 50
    for run_id in ids:
        assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", run_id)


def test_create_run_dir_points_latest_at_the_newest_run(tmp_path):
    first = rundir.create_run_dir(tmp_path, "20261129T190501Z-aaaaaa")
    latest = tmp_path / "latest"
    assert first.is_dir() and latest.is_symlink()
    assert os.readlink(latest) == "20261129T190501Z-aaaaaa"  # relative: the tree can move
    second = rundir.create_run_dir(tmp_path, "20261129T190502Z-bbbbbb")
    assert latest.resolve() == second.resolve()
    assert first.is_dir()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_create_run_dir_refuses_a_real_latest_folder(tmp_path):
    (tmp_path / "latest").mkdir()
    with pytest.raises(UsageError, match="not a symlink"):
        rundir.create_run_dir(tmp_path, "20261129T190501Z-aaaaaa")


@pytest.mark.parametrize("bad", ["", "latest", "a/b", ".hidden"])
def test_create_run_dir_rejects_bad_run_ids(tmp_path, bad):
    with pytest.raises(UsageError):
        rundir.create_run_dir(tmp_path, bad)


@pytest.mark.parametrize(
    ("nodeid", "expected"),
    [
        ("suites/test_race.py::test_scalein", "suites.test_race.test_scalein"),
        (
            "suites/test_race.py::test_scalein[upstream-draining]",
            "suites.test_race.test_scalein@upstream-draining",
        ),
        (
            "suites/test_race.py::TestSweep::test_phase[1]",
            "suites.test_race.TestSweep.test_phase@1",
        ),
        (
            "mo-chaos/.venv/lib/python3.11/site-packages/mochaos/suites/test_s.py::test_a",
            "mochaos.suites.test_s.test_a",
        ),
    ],
)
def test_test_dir_names_are_readable(tmp_path, nodeid, expected):
    folder = rundir.test_dir(tmp_path, nodeid)
    assert folder == tmp_path / expected
    assert folder.is_dir()


def test_test_dir_keeps_lossy_names_apart_and_stable(tmp_path):
    a = rundir.test_dir(tmp_path, "suites/t.py::test_x[a/b]")
    b = rundir.test_dir(tmp_path, "suites/t.py::test_x[a b]")
    assert a != b
    assert a.name.startswith("suites.t.test_x@a_b-")
    assert rundir.test_dir(tmp_path, "suites/t.py::test_x[a/b]") == a


def test_test_dir_stays_inside_the_run_dir_and_short(tmp_path):
    escape = rundir.test_dir(tmp_path, "../../etc/passwd::test_x")
    assert escape.parent == tmp_path
    long = rundir.test_dir(tmp_path, "suites/t.py::test_x[" + "p" * 400 + "]")
    assert long.parent == tmp_path and len(long.name) <= 130


def test_test_dir_is_not_collected_as_a_test():
    assert rundir.test_dir.__test__ is False
