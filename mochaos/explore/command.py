"""``python -m mochaos explore``: learn, extract points, run the matrix, group, shrink.

Each batch of cases is one pytest session of :mod:`mochaos.explore.test_explore` (one test
per case, ``-n`` workers, its own reports folder); its ``summary.json`` is the only input,
so a case's outcome is exactly what the plugin gave its test. Infrastructure errors and
inconclusive cases are counted apart and never become signatures.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from mochaos import exits
from mochaos.errors import InfraError, UsageError
from mochaos.explore import report
from mochaos.explore.matrix import parse_fault_kinds, pruned
from mochaos.explore.plan import (
    LEARN,
    Case,
    Exploration,
    Run,
    Step,
    case_of_test,
    load,
    merge_explorations,
)
from mochaos.explore.points import extract
from mochaos.explore.signatures import group, signature_of, size_key
from mochaos.observe.history import History
from mochaos.operator import parse_target
from mochaos.report.child_pytest import PytestRunner, reports_options, run_pytest
from mochaos.report.rundir import new_run_id
from mochaos.report.summary import SUMMARY_FILE
from mochaos.scenario import get_workload
from mochaos.shard import Shard, select

TESTS = Path(__file__).resolve().parent / "test_explore.py"
EXPLORATION_FILE = "exploration.json"
REPORT_FILE = "exploration.html"


@dataclass
class Settings:
    """What one ``explore`` invocation was asked to do."""

    operator: str
    workload: str
    faults: tuple[str, ...]
    budget: int | None = None
    repeat: int = 1
    depth: int = 1
    workers: int = 2
    resume: Path | None = None
    out_root: Path = Path("reports")
    cluster: str = "local"
    time_scale: float = 1.0
    extra_args: Sequence[str] = field(default_factory=tuple)
    shard: Shard | None = None
    """Run only this shard's cases of the matrix (the learn run's points come from
    ``resume``: every shard of one exploration must share them)."""
    learn_only: bool = False
    """Stop after the learn run: its exploration.json is what the shards resume."""


def in_shard(case_ids: list[str], shard: Shard | None) -> set[str]:
    """The cases of ``case_ids`` that fall to ``shard`` (dealt as the suites' tests are:
    by a hash of the test id each case runs as, mochaos.shard)."""
    if shard is None:
        return set(case_ids)
    tests = {f"{TESTS.name}::test_explore[{c}]": c for c in case_ids}
    return {tests[t] for t in select(list(tests), shard)}


class Explorer:
    """One invocation: its folder, its batches and the exploration it grows."""

    def __init__(
        self,
        settings: Settings,
        run_pytest: PytestRunner | None = None,
        *,
        matrixone: tuple[str, ...] = (),
    ) -> None:
        """``matrixone``: the MatrixOne components the target can make unreachable (its
        faults on them join the matrix)."""
        self.s = settings
        self.matrixone = matrixone
        self._run_pytest = run_pytest
        self.folder = settings.out_root / f"explore-{new_run_id()}"
        self.folder.mkdir(parents=True)
        self._batches = 0
        self.cases_run = 0
        self.batches: list[dict[str, Any]] = []
        """Per batch: what it was, its runs and workers, wall seconds."""

    # -- batches -----------------------------------------------------------------------

    def run_batch(self, exploration: Exploration, runs: dict[str, int], what: str) -> None:
        """Run ``runs`` (case id -> copies) in one pytest session; add their runs."""
        if not runs:
            return
        self._batches += 1
        batch_dir = self.folder / "runs" / f"{self._batches:02d}-{what}"
        batch_dir.mkdir(parents=True)
        batch = Exploration.from_dict(exploration.to_dict())
        batch.batch = dict(runs)
        path = batch.save(batch_dir / "batch.json")
        total = sum(runs.values())
        print(f"explore: {what}: {total} run(s) of {len(runs)} case(s) -> {batch_dir}", flush=True)
        started = time.monotonic()
        run = run_pytest(
            self._pytest_args(path, batch_dir, total), reports_dir=batch_dir,
            runner=self._run_pytest,
        )  # fmt: skip
        code, summary = run.exit_code, run.summary
        why = (f"no {SUMMARY_FILE} (pytest exit {code})" if summary is None
               else exits.unexplained(code, summary))  # fmt: skip
        if why:
            raise InfraError(f"explore batch {what} broke: {why}",
                             hint=f"see the reports in {batch_dir}")  # fmt: skip
        seen = dict.fromkeys(runs, 0)
        for test in summary.get("tests", []):
            test_id = _param_id(str(test.get("nodeid", "")))
            case = exploration.cases.get(case_of_test(test_id))
            if case is None or case.id not in seen:
                continue
            seen[case.id] += 1
            case.runs.append(_run_of(test))
        for case_id, copies in runs.items():
            for _ in range(copies - seen[case_id]):
                exploration.cases[case_id].runs.append(
                    Run(outcome="error", message="the batch reported no result for it")
                )
        self.cases_run += total
        seconds = time.monotonic() - started
        case_seconds = sum(
            run.duration for case_id, copies in runs.items()
            for run in exploration.cases[case_id].runs[-copies:]
        )  # fmt: skip
        self.batches.append({"what": what, "runs": total, "seconds": round(seconds, 1),
                             "workers": min(self.s.workers, total),
                             "case_seconds": round(case_seconds, 1)})  # fmt: skip
        counts = _counts(exploration, runs)
        print(f"explore: {what}: {counts} in {seconds:.0f}s (pytest exit {code})", flush=True)

    def _pytest_args(self, batch: Path, batch_dir: Path, total: int) -> list[str]:
        workers = max(1, min(self.s.workers, total))
        return [
            str(TESTS), f"--operator={self.s.operator}", f"--mochaos-cluster={self.s.cluster}",
            f"--mochaos-explore={batch}", *reports_options(batch_dir),
            "--time-scale", str(self.s.time_scale),
            "-n", str(workers if workers > 1 else 0), "-p", "no:cacheprovider", "-q",
            *self.s.extra_args,
        ]  # fmt: skip

    # -- the steps -----------------------------------------------------------------------

    def learn(self, exploration: Exploration) -> None:
        """The fault-free run, then its points; costs printed."""
        learn_case = Case(steps=())
        exploration.cases = {LEARN: learn_case}
        started = time.monotonic()
        self.run_batch(exploration, {LEARN: 1}, "learn")
        learned = time.monotonic() - started
        (run,) = learn_case.runs
        if run.outcome not in ("passed", "failed"):
            why = run.message.splitlines()[0] if run.message else "no message"
            raise InfraError(
                f"the learn run ended {run.outcome}: {why}",
                hint="no points without a learn run; see its report",
            )
        started = time.monotonic()
        history = History.from_jsonl(Path(run.timeline).with_name("history.jsonl"))
        exploration.points = extract(history)
        extracted = time.monotonic() - started
        exploration.learn = {
            "outcome": run.outcome, "signature": run.signature, "timeline": run.timeline,
            "seconds": round(learned, 1), "extract_seconds": round(extracted, 3),
            "history_entries": len(history),
            "interposed": any(True for _ in history.api_calls()),
        }  # fmt: skip
        print(report.points_table(exploration.points), flush=True)
        print(
            f"explore: learn run {learned:.0f}s ({run.outcome}); {len(exploration.points)} "
            f"points extracted from {len(history)} entries in {extracted * 1000:.0f} ms",
            flush=True,
        )

    def matrix(self, exploration: Exploration) -> list[Case]:
        """Every (point × fault) case of the default matrix, in matrix order (added when new)."""
        interposed = bool(exploration.learn.get("interposed", False))
        cells, skipped = pruned(exploration.points, self.s.faults, interposed=interposed,
                                matrixone=self.matrixone)  # fmt: skip
        cases = []
        for point, fault in cells:
            case = Case(steps=(Step(point.id, fault),))
            cases.append(exploration.cases.setdefault(case.id, case))
        if not interposed:
            print("explore: no interposer in the learn run: its faults are not in the matrix",
                  flush=True)  # fmt: skip
        elif any(skipped.values()):
            print(f"explore: matrix {len(cells)} cases; pruned "
                  + ", ".join(f"{n} {why}" for why, n in skipped.items()), flush=True)  # fmt: skip
        return cases

    def pairs(self, exploration: Exploration) -> list[Case]:
        """Pairs of single faults that each passed, at two points, earliest points first."""
        passed = [c for c in exploration.cases.values() if len(c.steps) == 1 and c.status == "pass"]
        passed.sort(key=lambda c: size_key(exploration, c))
        cases = []
        for a, b in combinations(passed, 2):
            if a.steps[0].point == b.steps[0].point:
                continue
            case = Case(steps=(a.steps[0], b.steps[0]))
            cases.append(exploration.cases.setdefault(case.id, case))
        return cases

    def shrink(self, exploration: Exploration) -> None:
        """Re-run each failing pair and its two singles ``--repeat`` times (one batch)."""
        runs: dict[str, int] = {}
        for case in exploration.cases.values():
            if len(case.steps) == 2 and case.status in ("fail", "flaky"):
                runs[case.id] = self.s.repeat
                for step in case.steps:
                    runs[Case(steps=(step,)).id] = self.s.repeat
        self.run_batch(exploration, runs, "shrink")

    def repeat_smallest(self, exploration: Exploration) -> None:
        """Re-run each signature's smallest case ``--repeat`` times (its flake rate)."""
        runs = {s.smallest: self.s.repeat for s in group(exploration) if s.smallest != LEARN}
        self.run_batch(exploration, runs, "repeat")


def _param_id(nodeid: str) -> str:
    return nodeid[nodeid.index("[") + 1 : -1] if nodeid.endswith("]") and "[" in nodeid else ""


def _run_of(test: dict[str, Any]) -> Run:
    failed = [v["invariant"] for v in test.get("verdicts", []) if v.get("status") == "fail"]
    bugs = sorted(test.get("bugs") or [])
    outcome = str(test.get("outcome", "error"))
    return Run(
        outcome=outcome,
        signature=signature_of(failed, bugs) if outcome == "failed" else "",
        invariants=sorted(failed), bugs=bugs,
        timeline=(test.get("artifacts") or {}).get("timeline_html", ""),
        seed=test.get("seed"), duration=round(float(test.get("duration") or 0.0), 1),
        message=str(test.get("message") or "")[:2000],
    )  # fmt: skip


def _counts(exploration: Exploration, runs: dict[str, int]) -> str:
    outcomes: dict[str, int] = {}
    for case_id, copies in runs.items():
        for run in exploration.cases[case_id].runs[-copies:]:
            outcomes[run.outcome] = outcomes.get(run.outcome, 0) + 1
    return ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items()))


def _identify(s: Settings) -> tuple[str, tuple[str, ...]]:
    """The target's identity (a model profile, a commit), checked before any run, and the
    MatrixOne components it can make unreachable."""
    found = parse_target(s.operator, {"cluster": s.cluster, "time_scale": s.time_scale})
    return found.version, tuple(found.matrixone_components)


def explore(settings: Settings, *, run_pytest: PytestRunner | None = None) -> int:
    """Run an exploration; write exploration.json and exploration.html; the exit status.

    By :mod:`mochaos.exits`: 1 at least one signature; 3 the learn run or some case broke
    (infrastructure), and no signature; 6 no signature, but some case judged nothing
    (inconclusive); 0 every case passed.
    """
    s = settings
    get_workload(s.workload)
    if s.budget is not None and s.budget < 0:
        raise UsageError(f"--budget must be >= 0, got {s.budget}", hint="cases to run, e.g. 20")
    if s.repeat < 1 or s.depth not in (1, 2) or s.workers < 1:
        raise UsageError(
            "--repeat and -n must be at least 1 and --depth 1 or 2",
            hint="e.g. --repeat 3 --depth 1 -n 2",
        )
    if s.shard is not None and s.resume is None:
        raise UsageError(
            "--shard needs --resume: the shards of one exploration share one learn run",
            hint="run explore --learn-only once, then each shard with --resume <its json>",
        )
    if s.shard is not None and s.depth != 1:
        raise UsageError(
            "--shard explores the single faults (--depth 1)",
            hint="pairs need every single's verdict: run --depth 2 unsharded",
        )
    version, matrixone = _identify(s)
    target = {"operator": s.operator, "version": version}
    explorer = Explorer(s, run_pytest, matrixone=matrixone)
    started = time.monotonic()
    if s.resume is not None:
        exploration = load(s.resume)
        asked = Exploration(workload=s.workload, target=target, time_scale=s.time_scale)
        if not asked.same_target(exploration):
            raise UsageError(
                f"{s.resume} explored {exploration.workload} on {exploration.target} (time "
                f"scale {exploration.time_scale}), not {s.workload} on {target}",
                hint="resume with the same --operator (same commit), --workload, --time-scale",
            )
        print(
            f"explore: resuming {s.resume}: {len(exploration.points)} points, "
            f"{sum(c.is_decided for c in exploration.cases.values())} cases decided",
            flush=True,
        )
    else:
        exploration = Exploration(
            workload=s.workload, target=target, time_scale=s.time_scale,
            fault_kinds=list(s.faults),
        )  # fmt: skip
        explorer.learn(exploration)
    path = exploration.save(explorer.folder / EXPLORATION_FILE)
    if s.learn_only:
        print(f"explore: learn run only: {path} (resume it, one shard each: --shard i/n)",
              flush=True)  # fmt: skip
        return exits.OK

    budget = s.budget
    matrix = explorer.matrix(exploration)
    mine = in_shard([c.id for c in matrix], s.shard)
    singles = [c for c in matrix if not c.is_decided and c.id in mine]
    if s.shard is not None:
        print(f"explore: shard {s.shard}: {len(mine)} of the matrix's {len(matrix)} cases",
              flush=True)  # fmt: skip
    chosen = singles if budget is None else singles[:budget]
    explorer.run_batch(exploration, {c.id: 1 for c in chosen}, "matrix")
    exploration.save(path)
    if s.depth == 2:
        left = None if budget is None else max(budget - len(chosen), 0)
        pairs = [c for c in explorer.pairs(exploration) if not c.is_decided]
        chosen_pairs = pairs if left is None else pairs[:left]
        explorer.run_batch(exploration, {c.id: 1 for c in chosen_pairs}, "pairs")
        explorer.shrink(exploration)
        exploration.save(path)
    if s.repeat > 1:
        explorer.repeat_smallest(exploration)
    signatures = group(exploration)
    exploration.signatures = [sig.to_dict() for sig in signatures]
    wall = time.monotonic() - started
    exploration.history.append({
        "budget": budget, "depth": s.depth, "repeat": s.repeat, "workers": s.workers,
        "faults": list(s.faults), "cases_run": explorer.cases_run, "seconds": round(wall, 1),
        "cases_per_hour": round(explorer.cases_run / wall * 3600, 1) if wall else None,
        "batches": explorer.batches,
    })  # fmt: skip
    exploration.save(path)
    html = report.write_html(exploration, explorer.folder / REPORT_FILE)
    print(report.summary(exploration, signatures), flush=True)
    print(f"explore: {path}; matrix {html}; {explorer.cases_run} runs in {wall:.0f}s", flush=True)
    return _status(exploration, signatures)


def merge(paths: list[Path], out_root: Path) -> int:
    """Merge the explorations of several shards (each an exploration.json, or a folder
    holding one) into one: exploration.json, its matrix page and its signatures under
    ``out_root``; the exit status of the merged exploration. Shards of different targets,
    workloads or learn runs are refused (usage error)."""
    found = [p if p.is_file() else p / EXPLORATION_FILE for p in paths]
    shards = [load(p) for p in found]
    merged = merge_explorations(shards, [str(p) for p in found])
    folder = out_root / f"explore-merged-{new_run_id()}"
    path = merged.save(folder / EXPLORATION_FILE)
    signatures = group(merged)
    merged.signatures = [sig.to_dict() for sig in signatures]
    merged.save(path)
    html = report.write_html(merged, folder / REPORT_FILE)
    print(report.summary(merged, signatures), flush=True)
    print(f"explore: merged {len(shards)} shard(s): {path}; matrix {html}", flush=True)
    return _status(merged, signatures)


def _status(exploration: Exploration, signatures: list[Any]) -> int:
    """An exploration's exit status (see :func:`explore`)."""
    if signatures:
        return exits.OPERATOR_FAILED
    if any(c.status == "error" for c in exploration.cases.values()):
        return exits.INFRA
    undecided = any(c.status == "inconclusive" for c in exploration.cases.values())
    return exits.INCONCLUSIVE if undecided else exits.OK


__all__ = ["Explorer", "Settings", "explore", "merge", "parse_fault_kinds"]
