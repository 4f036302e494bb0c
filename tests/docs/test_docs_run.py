"""Every code block in docs/ marked runnable runs as the page says.

A ``scenario`` block is saved as a test module and run by a child pytest on
``model:fixed`` at a small time scale, on the local cluster: it must pass. A block that
names a shipped file (``<!-- runnable: scenario <suite module> -->``) must also be that
file, word for word, so the page and the suite cannot drift apart. An ``invariant`` block
is a new invariant's module: dropped into a folder, found by discovery, judged by its
``invariant-test`` block (the page's test of it) and shown by ``python -m mochaos check``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import mochaos.invariants
from mochaos.cli import main
from mochaos.invariants import registry
from mochaos.observe.history import History, LogRecord
from mochaos.report.child_pytest import run_pytest

from .blocks import runnable_blocks

ROOT = Path(__file__).resolve().parents[2]
KINDS = {"scenario", "invariant", "invariant-test"}
"""The kinds of run a block may claim (each has its test below)."""
TIME_SCALE = "0.2"


def _blocks(kind: str):
    return [pytest.param(b, id=b.id) for b in runnable_blocks() if b.kind == kind]


def test_every_runnable_block_claims_a_known_run():
    blocks = runnable_blocks()
    assert {b.kind for b in blocks} == KINDS, [(b.id, b.kind) for b in blocks]


@pytest.mark.parametrize("block", _blocks("scenario"))
def test_scenario_block_is_its_suite_module(block):
    if not block.name:
        pytest.skip(f"{block.id} names no shipped suite module")
    assert block.code == (ROOT / "mochaos" / "suites" / f"{block.name}.py").read_text()


@pytest.mark.parametrize("block", _blocks("scenario"))
def test_scenario_block_passes_on_the_fixed_model(block, tmp_path):
    (tmp_path / "test_doc_block.py").write_text(block.code)
    run = run_pytest(
        ["test_doc_block.py", "-p", "no:cacheprovider", "-n", "0", "--operator", "model:fixed",
         "--time-scale", TIME_SCALE, "--mochaos-reports-dir", str(tmp_path / "reports")],
        reports_dir=tmp_path / "reports", cwd=tmp_path, capture=True, timeout=600,
    )  # fmt: skip
    assert run.exit_code == 0, run.output[-3000:]
    assert " passed" in run.stdout.strip().splitlines()[-1], run.output[-1500:]  # its summary


def _invariant_pairs():
    blocks = runnable_blocks()
    tests = {b.name: b for b in blocks if b.kind == "invariant-test"}
    return [pytest.param(b, tests.get(b.name), id=b.id) for b in blocks if b.kind == "invariant"]


@pytest.mark.parametrize(("module", "test"), _invariant_pairs())
def test_invariant_recipe_registers_itself_and_is_judged(
    module, test, tmp_path, monkeypatch, capsys
):
    assert test is not None, f"{module.id}: no invariant-test block for {module.name}"
    (tmp_path / f"{module.name}.py").write_text(module.code)
    qualified = f"{registry.PACKAGE}.{module.name}"
    monkeypatch.delitem(sys.modules, qualified, raising=False)
    found = registry.discover([tmp_path])
    added = [inv for inv in found if inv not in registry.ALL]
    assert [type(inv).__module__ for inv in added] == [qualified]
    (invariant,) = added
    monkeypatch.setattr(registry, "ALL", found)
    monkeypatch.setattr(registry, "_BY_ID", {inv.id: inv for inv in found})
    monkeypatch.setattr(mochaos.invariants, "ALL", found)

    # The page's test of it, run as tests/invariants/test_<module>.py would be.
    namespace = {"__name__": f"invariants.test_{module.name}", "__package__": "invariants"}
    exec(compile(test.code, test.id, "exec"), namespace)
    cases = [fn for name, fn in namespace.items() if name.startswith("test_")]
    assert len(cases) >= 2, "a test that must fail and one that must pass"
    for case in cases:
        case()

    # It now has its line in `python -m mochaos check`.
    history = tmp_path / "history.jsonl"
    History([LogRecord(0, 1.0, "info", "object is synced", "ns", "x")]).to_jsonl(history)
    capsys.readouterr()
    assert main(["check", str(history)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"PASS {invariant.id}: 0 migrating change(s)" in lines, lines


def _lint_path(block) -> Path:
    """Where the block's code would live in the checkout (ruff's rules depend on the path)."""
    if block.kind == "invariant":
        return ROOT / "mochaos" / "invariants" / f"{block.name}.py"
    if block.kind == "invariant-test":
        return ROOT / "tests" / "invariants" / f"test_{block.name}.py"
    return ROOT / "mochaos" / "suites" / f"{block.name or 'test_doc_block'}.py"


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id) for b in runnable_blocks()])
def test_runnable_block_is_lint_clean(block):
    """A reader copies these blocks: they pass the project's own ruff rules where they go."""
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--stdin-filename",
         str(_lint_path(block)), "-"],
        input=block.code, cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
