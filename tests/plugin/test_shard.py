"""--mochaos-shard i/n: a stable share of the collected tests, the same on every machine."""

from __future__ import annotations

import random

import pytest

from mochaos.shard import Shard, parse_shard, select

pytest_plugins = ["pytester"]

NODEIDS = [f"suites/test_s.py::test_case[{i}]" for i in range(11)] + [
    "suites/test_s.py::test_seed", "suites/test_t.py::test_other",
]  # fmt: skip


@pytest.mark.parametrize(("text", "shard"), [("1/1", Shard(1, 1)), ("2/3", Shard(2, 3)),
                                             (" 4/4 ", Shard(4, 4))])  # fmt: skip
def test_shards_are_i_of_n(text: str, shard: Shard):
    assert parse_shard(text) == shard and str(shard) == text.strip()


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "2", "a/b", "1/2/3", "-1/2", ""])
def test_other_shards_are_refused_in_one_line(text: str):
    with pytest.raises(ValueError, match="is not a shard: give i/n with 1 <= i <= n"):
        parse_shard(text)


def test_shards_cover_the_selection_once_and_differ_by_one_at_most():
    for total in (1, 2, 3, 5, 13, 20):
        parts = [select(NODEIDS, Shard(i, total)) for i in range(1, total + 1)]
        assert set().union(*parts) == set(NODEIDS)
        assert sum(map(len, parts)) == len(NODEIDS)
        assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_the_share_does_not_depend_on_collection_order_or_install_place():
    shuffled = random.Random(7).sample(NODEIDS, len(NODEIDS))
    assert select(shuffled, Shard(2, 3)) == select(NODEIDS, Shard(2, 3))
    moved = [n.replace("suites/", ".venv/lib/python3.12/site-packages/mochaos/suites/") for n in
             NODEIDS]  # fmt: skip
    assert {n.rsplit("/", 1)[1] for n in select(moved, Shard(2, 3))} == {
        n.rsplit("/", 1)[1] for n in select(NODEIDS, Shard(2, 3))
    }


INNER = "import pytest\n\n@pytest.mark.parametrize('i', range(7))\ndef test_case(i):\n    pass\n"


def _passed(result: pytest.RunResult) -> set[str]:
    return {ln.split()[0] for ln in result.outlines if " PASSED" in ln}


def test_pytest_runs_only_its_shard_and_together_they_run_everything(pytester):
    pytester.makepyfile(test_inner=INNER)
    shards = []
    for i in (1, 2, 3):
        result = pytester.runpytest("-p", "no:xdist", "-v", f"--mochaos-shard={i}/3")
        assert result.ret == 0
        shards.append(_passed(result))
    assert sorted(map(len, shards)) == [2, 2, 3]
    assert len(set().union(*shards)) == 7


def test_the_environment_names_the_shard_too(pytester, monkeypatch):
    pytester.makepyfile(test_inner=INNER)
    by_option = _passed(pytester.runpytest("-p", "no:xdist", "-v", "--mochaos-shard=2/3"))
    monkeypatch.setenv("MOCHAOS_SHARD", "2/3")
    assert _passed(pytester.runpytest("-p", "no:xdist", "-v")) == by_option


def test_a_shard_nothing_fell_to_exits_0(pytester):
    pytester.makepyfile(test_inner="def test_only():\n    pass\n")
    ran = [pytester.runpytest("-p", "no:xdist", f"--mochaos-shard={i}/2") for i in (1, 2)]
    assert sorted(r.ret for r in ran) == [0, 0]
    assert sorted(r.parseoutcomes().get("passed", 0) for r in ran) == [0, 1]


def test_a_bad_shard_is_a_usage_error_before_any_test(pytester, monkeypatch):
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest("-p", "no:xdist", "--mochaos-shard=4/3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--mochaos-shard: '4/3' is not a shard: give i/n*"])
    monkeypatch.setenv("MOCHAOS_SHARD", "x")
    result = pytester.runpytest("-p", "no:xdist")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*MOCHAOS_SHARD='x': 'x' is not a shard*"])
