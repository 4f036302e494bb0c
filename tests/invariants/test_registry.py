"""mochaos.invariants: discovery (a module and a doc entry per invariant), ALL, get, evaluate."""

import dataclasses
import sys
from pathlib import Path

import pytest

from mochaos.bugs import BUGS
from mochaos.config import CheckOptions
from mochaos.errors import UsageError
from mochaos.invariants import ALL, evaluate, get, registry
from mochaos.invariants.base import InvariantBase
from mochaos.observe.history import History

from .design import DESIGN
from support.builders import HistoryBuilder, bind

IDS = [invariant.id for invariant in ALL]
PACKAGE = Path(registry.__file__).parent
ROOT = PACKAGE.parents[1]


def test_the_design_s_ten_first_then_any_added_with_identity():
    assert tuple(IDS[: len(DESIGN)]) == DESIGN
    assert len(set(IDS)) == len(IDS)
    assert [inv.rank for inv in ALL] == sorted(inv.rank for inv in ALL)
    for invariant in ALL:
        assert isinstance(invariant, InvariantBase)
        assert invariant.severity == "error"
        assert set(invariant.bugs) <= set(BUGS), invariant.id
    covered = {bug for invariant in ALL for bug in invariant.bugs}
    assert covered == set(BUGS)


@pytest.mark.parametrize("invariant", ALL, ids=IDS)
def test_each_invariant_is_one_module_with_its_tests(invariant):
    module = sys.modules[type(invariant).__module__]
    name = module.__name__.rpartition(".")[2]
    assert name == invariant.id.replace("-", "_")
    assert module.INVARIANT is invariant
    assert (ROOT / "tests" / "invariants" / f"test_{name}.py").is_file()


def test_every_module_of_the_package_is_machinery_or_an_invariant():
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    invariants = {type(inv).__module__.rpartition(".")[2] for inv in ALL}
    assert modules - invariants == set(registry.FRAMEWORK)


def test_a_module_dropped_into_a_folder_registers_itself(tmp_path):
    (tmp_path / "always_fine.py").write_text(ADDED)
    found = registry.discover([tmp_path])
    assert [inv.id for inv in found] == [*IDS, "always-fine"]
    assert sys.modules[f"{registry.PACKAGE}.always_fine"].INVARIANT is found[-1]
    verdicts = evaluate(History(), CheckOptions(), final=True, invariants=found)
    assert (verdicts[-1].invariant, verdicts[-1].status) == ("always-fine", "pass")
    sys.modules.pop(f"{registry.PACKAGE}.always_fine", None)


def test_two_invariants_with_one_id_are_refused(tmp_path):
    (tmp_path / "again.py").write_text(ADDED.replace("always-fine", "retry-budget"))
    with pytest.raises(ValueError, match="'retry-budget' defined twice"):
        registry.discover([tmp_path])
    sys.modules.pop(f"{registry.PACKAGE}.again", None)


def test_modules_without_an_invariant_and_private_modules_are_skipped(tmp_path):
    (tmp_path / "helpers.py").write_text("VALUE = 1\n")
    (tmp_path / "_private.py").write_text(ADDED.replace("always-fine", "private"))
    (tmp_path / "later.py").write_text(ADDED.replace("always-fine", "later"))
    assert registry.discover([tmp_path]) == (
        *ALL,
        sys.modules[f"{registry.PACKAGE}.later"].INVARIANT,
    )
    for name in ("helpers", "later"):
        sys.modules.pop(f"{registry.PACKAGE}.{name}", None)
    assert f"{registry.PACKAGE}._private" not in sys.modules


def test_an_invariant_that_is_not_an_invariant_base_is_refused(tmp_path):
    (tmp_path / "odd.py").write_text("INVARIANT = object()\n")
    with pytest.raises(ValueError, match=r"mochaos\.invariants\.odd\.INVARIANT is not an"):
        registry.discover([tmp_path])
    sys.modules.pop(f"{registry.PACKAGE}.odd", None)


def test_rank_orders_before_the_id(tmp_path):
    (tmp_path / "early.py").write_text(
        ADDED.replace("always-fine", "zz-early").replace("rank = 10**6", "rank = 0")
    )
    (tmp_path / "always_fine.py").write_text(ADDED)
    found = [inv.id for inv in registry.discover([tmp_path])]
    assert found == ["zz-early", *IDS, "always-fine"]
    for name in ("early", "always_fine"):
        sys.modules.pop(f"{registry.PACKAGE}.{name}", None)


ADDED = """
from mochaos.invariants.base import InvariantBase, Judge


class AlwaysFine(InvariantBase):
    id = "always-fine"
    rank = 10**6  # after every invariant of the package, those added later included

    def judge(self, options, facts):
        return FineJudge(self, options, facts)


class FineJudge(Judge):
    def verdict(self, *, now, final):
        return self.invariant.passed("nothing to see")


INVARIANT = AlwaysFine()
"""


def test_get_by_id_and_unknown_id():
    assert get("retry-budget") is ALL[7]
    with pytest.raises(KeyError) as err:
        get("nope")
    assert err.value.args[0] == "unknown invariant 'nope'; known: " + ", ".join(IDS)


def test_evaluate_gives_one_verdict_per_invariant_in_order():
    b = HistoryBuilder()
    bind(b, "X", "A")
    running = evaluate(b.build(), CheckOptions(), final=False)
    assert [v.invariant for v in running] == IDS
    skipped = {v.invariant: v.note for v in running if v.status == "skipped"}
    assert skipped == {
        "migration-completes": "no migration happened",
        "pod-claim-agreement": "evaluated at settle",
        "no-leaked-pods": "evaluated at settle",
    }
    settled = evaluate(b.build(), CheckOptions(), final=True)
    assert [v.status for v in settled].count("pass") == len(ALL) - 2
    assert settled[IDS.index("pod-claim-agreement")].status == "pass"


def test_every_verdict_carries_its_invariant_s_identity():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.delete("Pod", "A")
    for final in (False, True):
        verdicts = evaluate(b.build(), CheckOptions(), final=final)
        for invariant, verdict in zip(ALL, verdicts, strict=True):
            assert (verdict.invariant, verdict.bugs, verdict.severity) == (
                invariant.id, invariant.bugs, invariant.severity,
            )  # fmt: skip
    statuses = {v.status for v in evaluate(b.build(), CheckOptions(), final=True)}
    assert statuses == {"pass", "fail", "skipped"}


def test_empty_history():
    verdicts = {v.invariant: v.status for v in evaluate(History(), CheckOptions(), final=True)}
    assert verdicts.pop("migration-completes") == "skipped"
    assert verdicts.pop("no-leaked-pods") == "skipped"
    assert set(verdicts.values()) == {"pass"}


@pytest.mark.parametrize(
    ("field", "value"),
    [("grace", -1), ("finalize_timeout", -0.5), ("retry_budget", -1), ("time_scale", 0)],
)
def test_bad_options_are_usage_errors(field, value):
    options = dataclasses.replace(CheckOptions(), **{field: value})
    with pytest.raises(UsageError, match=f"invariant option {field}="):
        evaluate(History(), options, final=True)


def test_evaluate_judges_deadlines_passed_by_now():
    b = HistoryBuilder()
    bind(b, "X", "A")
    b.at(10).claim("X", deleting=True)
    options = CheckOptions(finalize_timeout=60)
    late = {v.invariant: v.status for v in evaluate(b.build(), options, final=False, now=100)}
    early = {v.invariant: v.status for v in evaluate(b.build(), options, final=False)}
    assert (late["finalizer-completes"], early["finalizer-completes"]) == ("fail", "pass")
