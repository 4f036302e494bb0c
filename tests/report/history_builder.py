"""Nights of qualifications for the history tests, written by qualify() itself (fake pytest)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mochaos.invariants.verdict import Verdict
from mochaos.report import build_history as history
from mochaos.report import rundir
from mochaos.report.qualify import qualify
from mochaos.report.result import ScenarioResult
from mochaos.report.summary import merge_summary, write_result


@dataclass
class Night:
    """One qualification of ``build``: per scenario, the outcome of each run."""

    build: str
    plan: dict[str, list[str]]
    invariants: dict[str, str] = field(default_factory=dict)
    """The invariant a scenario's failed runs violate (default finalizer-completes)."""

    @property
    def target(self) -> str:
        return f"image:op:{self.build}"


def _fake_pytest(night: Night):
    calls = []

    def run(args: list[str]) -> int:
        i = len(calls)
        calls.append(args)
        reports = Path(args[args.index("--mochaos-reports-dir") + 1])
        run_dir = rundir.create_run_dir(reports, rundir.new_run_id())
        failed = False
        for name, outcomes in night.plan.items():
            if i >= len(outcomes):
                continue
            nodeid = f"suites/test_t.py::{name}"
            folder = rundir.test_dir(run_dir, nodeid)
            timeline = folder / "timeline.html"
            timeline.write_text(f"<html>{name} run {i + 1} {outcomes[i]}</html>")
            status = "fail" if outcomes[i] == "failed" else "pass"
            invariant = night.invariants.get(name, "finalizer-completes")
            write_result(folder, ScenarioResult(
                nodeid=nodeid, outcome=outcomes[i], verdicts=[Verdict(invariant, status)],
                artifacts={"timeline_html": str(timeline)},
            ))  # fmt: skip
            failed |= outcomes[i] == "failed"
        merge_summary(run_dir, meta={"operator_target": night.target,
                                     "operator_version": night.build})  # fmt: skip
        return 1 if failed else 0

    return run


def record_nights(tmp_path: Path, store: Path, nights: list[Night]) -> list[Path]:
    """Qualify each night with a fake pytest and append it to ``store``; the records' paths."""
    suites = tmp_path / "suites"
    suites.mkdir(exist_ok=True)
    paths = []
    for k, night in enumerate(nights):
        out = tmp_path / f"night-{k}"
        repeat = max(map(len, night.plan.values()))
        qualify(operator=night.target, cluster="local", suites=suites, out_root=out,
                repeat=repeat, run_pytest=_fake_pytest(night))  # fmt: skip
        (qdir,) = out.glob("qual-*")
        paths.append(history.append(store, qdir))
    return paths
