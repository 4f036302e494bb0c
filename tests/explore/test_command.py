"""The explore command's logic on stand-in batches: matrix, signatures, repeat, resume,
pairs and shrinking, exit statuses."""

from __future__ import annotations

import json

import pytest

from mochaos.errors import UsageError
from mochaos.explore.command import EXPLORATION_FILE, Settings, explore
from mochaos.explore.matrix import FAULTS
from mochaos.explore.plan import load

from .fake_pytest import PASS, SEED_RACE, FakePytest

SEED_CASE = "p03-scale-in.migrating-set"
"""Scale-in of X's set once X's source pod drains: the bug report's race."""


def _settings(tmp_path, **kw) -> Settings:
    kw.setdefault("faults", tuple(FAULTS))
    return Settings(
        operator="model:fixed", workload="migration", workers=2, out_root=tmp_path, **kw
    )


def _mtime(path):
    return path.stat().st_mtime_ns


def _exploration(tmp_path):
    (path,) = sorted(tmp_path.glob(f"explore-*/{EXPLORATION_FILE}"), key=_mtime)[-1:]
    return load(path), path


def test_a_green_target_gives_no_signature_and_every_cell_decided(tmp_path):
    fake = FakePytest(lambda case, n: PASS)
    assert explore(_settings(tmp_path), run_pytest=fake) == 0
    exploration, path = _exploration(tmp_path)
    assert len(exploration.points) == 8
    assert fake.batches[0] == ["learn"]
    assert {c.status for c in exploration.cases.values()} == {"pass"}
    assert len(fake.batches[1]) == len(exploration.cases) - 1  # the whole default matrix
    assert exploration.signatures == []
    assert exploration.learn["extract_seconds"] >= 0
    assert (path.parent / "exploration.html").is_file()


def test_failures_are_grouped_by_signature_with_the_smallest_case_and_its_flake_rate(tmp_path):
    def policy(case, n):
        if case in (SEED_CASE, "p05-scale-in.migrating-set"):
            return SEED_RACE if n != 2 else PASS  # the third run of each does not reproduce
        if case == "p03-delete-pod.source-pod":
            return ("inconclusive", [], [])
        if case == "p03-restart":
            return ("error", [], [])
        return PASS

    fake = FakePytest(policy)
    assert explore(_settings(tmp_path, repeat=3), run_pytest=fake) == 1
    exploration, path = _exploration(tmp_path)
    (sig,) = exploration.signatures
    assert sig["bugs"] == ["B1", "B2", "B5", "B6"]
    assert sig["smallest"] == SEED_CASE  # p03 comes before p05
    assert "source pod: phase Bound → Draining ⇒ scale-in migrating set" in sig["smallest_label"]
    assert sig["cases"] == ["p03-scale-in.migrating-set", "p05-scale-in.migrating-set"]
    assert fake.batches[-1] == [SEED_CASE, f"{SEED_CASE}~2", f"{SEED_CASE}~3"]  # repeat only it
    assert (sig["reproduced"], sig["runs"]) == (3, 4)
    assert sig["flake_rate"] == 0.25
    statuses = {c.id: c.status for c in exploration.cases.values()}
    assert statuses["p03-delete-pod.source-pod"] == "inconclusive"
    page = (path.parent / "exploration.html").read_text()
    cell = page[page.index(f'title="{SEED_CASE}"') :].split("</td>", 1)[0]
    assert "test_explore@p03-scale-in.migrating-set_3-" in cell, cell  # its last failed run
    assert "flaky: finalizer-completes" in cell and "(4 runs)" in cell, cell
    assert statuses["p03-restart"] == "error"


def test_inconclusive_and_errors_never_become_signatures(tmp_path):
    fake = FakePytest(lambda case, n: ("inconclusive", [], []) if "kill" in case else PASS)
    assert explore(_settings(tmp_path), run_pytest=fake) == 6  # judged nothing there: not 0
    fake = FakePytest(lambda case, n: ("error", [], []) if "kill" in case else PASS)
    assert explore(_settings(tmp_path), run_pytest=fake) == 3
    exploration, _ = _exploration(tmp_path)
    assert exploration.signatures == []


def test_resume_spends_the_budget_on_cells_not_decided_yet(tmp_path):
    first = FakePytest(lambda case, n: ("inconclusive", [], []) if "kill" in case else PASS)
    explore(_settings(tmp_path, budget=10), run_pytest=first)
    exploration, path = _exploration(tmp_path)
    decided = {c.id for c in exploration.cases.values() if c.is_decided}
    second = FakePytest(lambda case, n: PASS)
    explore(_settings(tmp_path, budget=10, resume=path), run_pytest=second)
    assert "learn" not in second.batches[0]
    assert not decided & set(second.batches[0])
    assert len(second.batches[0]) == 10
    assert any("kill" in c for c in second.batches[0])  # inconclusive: explored again
    resumed, _ = _exploration(tmp_path)
    assert len([c for c in resumed.cases.values() if c.is_decided]) == len(decided) + 10
    # The batch's own runs only (a second of each), not those of the first invocation.
    matrix = next(b for b in resumed.history[-1]["batches"] if b["what"] == "matrix")
    assert matrix["case_seconds"] == 10.0


def test_resume_refuses_another_target(tmp_path):
    explore(_settings(tmp_path, budget=1), run_pytest=FakePytest(lambda case, n: PASS))
    _, path = _exploration(tmp_path)
    other = _settings(tmp_path, resume=path)
    other.operator = "model:upstream"
    with pytest.raises(UsageError, match="resume with the same --operator"):
        explore(other, run_pytest=FakePytest(lambda case, n: PASS))


PAIR = "p01-restart+p03-restart"


def _pairs_settings(tmp_path) -> Settings:
    return _settings(tmp_path, depth=2, repeat=3, faults=("restart",))


def _pair_policy(single_fails_in_shrink: bool):
    def policy(case, n):
        if case == PAIR:
            return SEED_RACE
        if case == "p03-restart" and n > 0 and single_fails_in_shrink:
            return SEED_RACE  # passed in the matrix, fails when re-run: a flake of the matrix
        return PASS

    return policy


def test_a_failing_pair_whose_singles_pass_needs_both(tmp_path):
    fake = FakePytest(_pair_policy(single_fails_in_shrink=False))
    assert explore(_pairs_settings(tmp_path), run_pytest=fake) == 1
    exploration, _ = _exploration(tmp_path)
    (sig,) = exploration.signatures
    assert sig["smallest"] == PAIR and sig["needs_both"]
    shrink = next(b for b in fake.batches if PAIR in b and "p01-restart" in b)
    assert sorted(shrink).count("p03-restart~3") == 1  # each single re-run --repeat times


def test_a_failing_pair_shrinks_to_the_single_that_fails_above_the_threshold(tmp_path):
    fake = FakePytest(_pair_policy(single_fails_in_shrink=True))
    assert explore(_pairs_settings(tmp_path), run_pytest=fake) == 1
    exploration, _ = _exploration(tmp_path)
    (sig,) = exploration.signatures
    assert sig["smallest"] == "p03-restart" and not sig["needs_both"]


def test_a_single_failing_once_in_many_runs_does_not_shrink_a_pair(tmp_path):
    def policy(case, n):
        if case == PAIR:
            return SEED_RACE
        return SEED_RACE if case == "p03-restart" and n == 1 else PASS

    fake = FakePytest(policy)
    explore(_pairs_settings(tmp_path), run_pytest=fake)
    exploration, _ = _exploration(tmp_path)
    (sig,) = exploration.signatures
    assert sig["smallest"] == PAIR and sig["needs_both"]  # 1 of 4 runs: below the threshold
    assert json.loads(json.dumps(sig)) == sig


def test_two_shards_of_one_learn_run_merged_give_the_unsharded_signatures(tmp_path):
    """One learn run; its matrix dealt to two shards (each case to exactly one); the merged
    exploration holds every case's runs and the same signatures as the matrix run whole."""
    from mochaos.explore.command import merge
    from mochaos.shard import Shard

    def policy(case, n):
        return SEED_RACE if case in (SEED_CASE, "p05-scale-in.migrating-set") else PASS

    assert explore(_settings(tmp_path / "learn", learn_only=True),
                   run_pytest=FakePytest(policy)) == 0  # fmt: skip
    (learned,) = (tmp_path / "learn").glob(f"explore-*/{EXPLORATION_FILE}")
    whole = FakePytest(policy)
    assert explore(_settings(tmp_path / "whole", resume=learned), run_pytest=whole) == 1
    ran: list[str] = []
    for i in (1, 2):
        fake = FakePytest(policy)
        explore(_settings(tmp_path / f"shard{i}", resume=learned, shard=Shard(i, 2)),
                run_pytest=fake)  # fmt: skip
        ran += fake.batches[0]
    assert sorted(ran) == sorted(whole.batches[0])  # every case once, in one shard
    shards = sorted(tmp_path.glob(f"shard*/explore-*/{EXPLORATION_FILE}"))
    assert merge(shards, tmp_path / "merged") == 1
    (merged_path,) = (tmp_path / "merged").glob(f"explore-merged-*/{EXPLORATION_FILE}")
    merged, (whole_exploration, _) = load(merged_path), _exploration(tmp_path / "whole")
    assert [(s["signature"], s["smallest"], s["cases"]) for s in merged.signatures] == [
        (s["signature"], s["smallest"], s["cases"]) for s in whole_exploration.signatures
    ]
    assert (merged_path.parent / "exploration.html").is_file()


def test_a_shard_needs_the_learn_run_it_shares_and_merges_only_its_siblings(tmp_path):
    from mochaos.explore.command import merge
    from mochaos.shard import Shard

    with pytest.raises(UsageError, match="--shard needs --resume"):
        explore(_settings(tmp_path, shard=Shard(1, 2)), run_pytest=FakePytest(lambda c, n: PASS))
    for name in ("a", "b"):
        explore(_settings(tmp_path / name), run_pytest=FakePytest(lambda c, n: PASS))
    a, b = sorted(tmp_path.glob(f"*/explore-*/{EXPLORATION_FILE}"))
    data = json.loads(b.read_text())
    data["points"] = data["points"][1:]  # another learn run
    b.write_text(json.dumps(data))
    with pytest.raises(UsageError, match="is not a shard of the exploration"):
        merge([a, b], tmp_path / "merged")
