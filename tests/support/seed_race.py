"""The seed race written by hand, and the script that stores it for the report tests.

``seed_race()`` is the production race of docs/operator-behaviour.md §11.1 at small scale,
built of whole objects as the recorder sees them (:meth:`HistoryBuilder.recorded`);
``PYTHONPATH=tests python -m support.seed_race`` rewrites tests/report/data/'s
``seed_race.history.jsonl`` and ``seed_race.case.json`` from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mochaos.ctrl.objects import CLAIM_FINALIZER, CLAIMED_BY_LABEL, PHASE_LABEL
from mochaos.invariants.verdict import Verdict, Violation
from mochaos.observe.history import Change, History
from mochaos.report.result import ScenarioResult

from support.builders import SEED_NAMESPACE, SEED_START, HistoryBuilder
from support.builders import iso as _iso

DATA = Path(__file__).resolve().parents[1] / "report" / "data"


# --------------------------------------------------------------------------
# Operator moves used by the seed race
# --------------------------------------------------------------------------


def _bind(b: HistoryBuilder, claim: str, pod: str, node: str) -> Change:
    """The operator's Bind of ``claim`` to ``pod``: log, relabel, spec patch, status."""
    b.log("start bind cn claim", claim)
    b.t += 0.01
    b.edit("CNClaim", claim, lambda o: o["metadata"].update(finalizers=[CLAIM_FINALIZER]))

    def own(o: dict[str, Any]) -> None:
        o["metadata"]["labels"].update({PHASE_LABEL: "Bound", CLAIMED_BY_LABEL: claim})

    b.edit("Pod", pod, own)
    b.log("CN bind success", claim, **{"claimed CN": {"metadata": {"name": pod}}})
    b.t += 0.01
    b.edit("CNClaim", claim, lambda o: o["spec"].update(podName=pod, nodeName=node))
    stamp = _iso(b.t)
    bound = b.edit(
        "CNClaim",
        claim,
        lambda o: o.update(
            status={
                "phase": "Bound",
                "boundTime": stamp,
                "store": {"string": pod, "boundTime": stamp},
            }
        ),
    )
    b.event(f"{claim}.synced", claim=claim, reason="ReconcileSuccess", message="object is synced")
    return bound


def seed_race() -> tuple[History, ScenarioResult]:
    """The production race of docs/operator-behaviour.md §11.1 against the upstream operator,
    at small scale.

    Claims X, Y of set S1 and Z of set S2 bound to pods A, C and B. The agent
    migrates X from A onto B (Z's pod, from a stale view) and retries every 5 s;
    the operator relabels B for X and drains A; mo-chaos lowers S1 to 1 while A
    drains; scale-in picks X; X's Finalize skips B (Z holds it) 40 times, 2 s apart.
    """
    b = HistoryBuilder.recorded()
    b.at(0.0).marker("scenario")
    b.at(0.05)
    for pod, node in (("A", "node-1"), ("B", "node-2"), ("C", "node-3")):
        b.running_pod(pod, node=node)
    for offset, name, replicas in ((0.5, "S1", 2), (0.55, "S2", 1)):
        created = b.at(offset).created_claimset(name, replicas=replicas)
        b.action("create", "CNClaimSet", name, params={"replicas": replicas}, write_rv=created.rv)
    b.at(0.8).log("scale claimset", "S1", desiredReplicas=2, updatedReplicas=0, outdatedReplicas=0)
    b.created_claim("X", claimset="S1")
    b.created_claim("Y", claimset="S1")
    b.at(0.85).created_claim("Z", claimset="S2")
    x_bound = _bind(b.at(1.0), "X", "A", "node-1")
    _bind(b.at(1.2), "Y", "C", "node-3")
    _bind(b.at(1.4), "Z", "B", "node-2")

    # The agent asks to move X from A to B; its view of B (Idle) is stale.
    def migrate(o: dict[str, Any]) -> None:
        o["spec"].update(sourcePod={"podName": "A", "nodeName": "node-1"}, podName="B")
        o["spec"]["nodeName"] = "node-2"

    migration = b.at(5.0).edit("CNClaim", "X", migrate)
    migrate_params = {"claim": "X", "source": "A", "target": "B"}
    b.action(
        "request_migration",
        "CNClaim",
        "X",
        params=migrate_params,
        trigger="claim_bound(X)",
        trigger_rv=x_bound.rv,
        write_rv=migration.rv,
        in_window=True,
        component="agent",
    )
    b.at(5.1).log("migrate claimed pod", "X", source="A", target="B")
    b.edit("Pod", "B", lambda o: o["metadata"]["labels"].update({CLAIMED_BY_LABEL: "X"}))
    double_bound = b.seq
    stamp = _iso(b.t)
    b.edit("CNClaim", "X", lambda o: o["status"]["store"].update(string="B", boundTime=stamp))
    b.at(5.2).edit(
        "Pod",
        "B",
        lambda o: o["status"].update(conditions=[{"type": "Ready", "lastProbeTime": stamp}]),
    )

    def agent_retry(offset: float) -> None:
        b.at(offset).action(
            "request_migration",
            "CNClaim",
            "X",
            params=migrate_params,
            write_rv=b.current_rv("CNClaim", "X"),
            component="agent",
        )

    for offset in (10.0, 15.0, 20.0):
        agent_retry(offset)

    # propagationDelay (15 s) later: drain the source.
    b.at(20.15).log("migrate claimed pod", "X", source="A", target="B")
    b.log("start draining source pod", "X", pod="A")

    def drain(o: dict[str, Any]) -> None:
        o["metadata"]["labels"][PHASE_LABEL] = "Draining"
        del o["metadata"]["labels"][CLAIMED_BY_LABEL]
        o["metadata"]["annotations"] = {"matrixorigin.io/reclaimed-at": _iso(b.t)}

    draining = b.at(20.18).edit("Pod", "A", drain)
    b.at(20.2).edit(
        "CNClaim",
        "X",
        lambda o: o["status"].update(migrate={"source": {"connections": 0, "pipelines": 0}}),
    )

    agent_retry(25.0)

    # The fault: lower S1 while A drains.
    scaled = b.at(25.0).edit("CNClaimSet", "S1", lambda o: o["spec"].update(replicas=1))
    b.action(
        "scale_claimset",
        "CNClaimSet",
        "S1",
        params={"replicas": 1},
        trigger="source_pod_phase(Draining)",
        trigger_rv=draining.rv,
        write_rv=scaled.rv,
        in_window=True,
    )
    b.at(25.05).log(
        "scale claimset", "S1", desiredReplicas=1, updatedReplicas=2, outdatedReplicas=0
    )
    b.log(
        "sort claims to scale-in",
        "S1",
        sorted=[
            {"claim": {"metadata": {"name": "X"}}, "pod": {"metadata": {"name": "B"}}},
            {"claim": {"metadata": {"name": "Y"}}, "pod": {"metadata": {"name": "C"}}},
        ],
    )
    deleting = b.at(25.06).edit(
        "CNClaim", "X", lambda o: o["metadata"].update(deletionTimestamp=_iso(b.t))
    )
    b.at(25.08).edit(
        "CNClaimSet", "S1", lambda o: o.update(status={"replicas": 1, "readyReplicas": 1})
    )

    violations: dict[str, Violation] = {
        "single-binding": Violation(
            t=SEED_START + 5.1,
            seq=double_bound,
            objects=("pod/B", "CNClaim/X", "CNClaim/Z"),
            message="pod/B is referenced by claim/X (spec.podName, label) "
            "and claim/Z (spec.podName)",
        ),
        "scalein-skips-migrating": Violation(
            t=deleting.t,
            seq=deleting.seq,
            objects=("claimset/S1", "claim/X"),
            message="scale-in deleted claim/X while it migrated from pod/A; "
            "claim/Y was not migrating",
        ),
    }

    finalize_passes = 40
    agent_offsets = [o * 5.0 for o in range(6, 22)]  # 30 s ... 105 s
    events: list[tuple[float, int, Callable[[], None]]] = []
    for k in range(finalize_passes):
        t0 = 25.1 + 2.0 * k

        def finalize_pass(t0: float = t0) -> None:
            b.at(t0).log("finalize CNClaim", "X")
            b.log("skip reclaim, pod still claimed by other CNClaim", "X", pod="B", holder="Z")
            b.log("does not complete finalizing, retry", "X")

        events.append((t0, 0, finalize_pass))
    for offset in agent_offsets:
        events.append((offset, 1, lambda offset=offset: agent_retry(offset)))

    def drained() -> None:
        def idle(o: dict[str, Any]) -> None:
            o["metadata"]["labels"][PHASE_LABEL] = "Idle"
            o["metadata"]["annotations"] = {}

        b.at(35.3).edit("Pod", "A", idle)

    events.append((35.3, 2, drained))
    marks = {
        "no-label-residue": (40.1, "pod/B is labelled claimed-by=X but claim/X is deleting"),
        "retry-budget": (45.1, "claim/X: 11 finalize retries within 60 s (budget 10)"),
        "finalizer-completes": (
            85.1,
            "claim/X still has finalizer matrixorigin.io/cn-claim-manager "
            "60.0 s after its deletionTimestamp (limit 60 s)",
        ),
    }
    for invariant, (offset, message) in marks.items():

        def mark(
            invariant: str = invariant, offset: float = offset, message: str = message
        ) -> None:
            objects = ("pod/B", "claim/X") if invariant == "no-label-residue" else ("claim/X",)
            violations[invariant] = Violation(
                t=SEED_START + offset, seq=b.seq, objects=objects, message=message
            )

        events.append((offset, 3, mark))
    for _, _, step in sorted(events, key=lambda e: (e[0], e[1])):
        step()

    settled = b.at(106.0).marker("settled")
    violations["pod-claim-agreement"] = Violation(
        t=settled.t,
        seq=settled.seq,
        objects=("pod/B", "claim/Z"),
        message="pod/B is Bound with claimed-by=X, but the live claim naming it is claim/Z",
    )

    def verdict(invariant: str, status: str, bugs: tuple[str, ...] = (), note: str = "") -> Verdict:
        return Verdict(
            invariant=invariant,
            status=status,  # type: ignore[arg-type]
            bugs=bugs,
            violation=violations.get(invariant) if status == "fail" else None,
            note=note,
        )

    verdicts = [
        verdict("finalizer-completes", "fail", ("B1",)),
        verdict("no-label-residue", "fail", ("B5", "B4")),
        verdict("single-binding", "fail", ("#581",)),
        verdict("bound-has-pod", "pass", ("B3",)),
        verdict("scalein-skips-migrating", "fail", ("B2", "B6")),
        verdict("migration-completes", "skipped", note="migration timeout (300 s) not reached"),
        verdict("replicas-converge", "pass"),
        verdict("retry-budget", "fail"),
        verdict("pod-claim-agreement", "fail", ("B5",)),
        verdict("no-leaked-pods", "skipped", note="scenario has no epilogue"),
    ]
    result = ScenarioResult(
        nodeid="suites/test_race.py::test_scalein_during_migration[upstream]",
        outcome="failed",
        operator_target="model:upstream",
        operator_version="eb9b356",
        cluster_provider="local",
        k8s_version="v1.31.0",
        verdicts=verdicts,
        finalize_retries={"X": finalize_passes},
        agent_migration_retries=len(agent_offsets) + 4,
        duration=106.0,
        seed=7,
    )
    return b.history(), result


SEED_TITLE = "scalein_during_migration — model:upstream"
SEED_META = {
    "operator": "model:upstream (eb9b356)",
    "cluster": "local, Kubernetes v1.31.0",
    "namespace": SEED_NAMESPACE,
    "verdict": "failed: finalizer-completes, no-label-residue, single-binding, "
    "scalein-skips-migrating, retry-budget, pod-claim-agreement",
}


def write_seed_race(data: Path = DATA) -> None:
    """Store the seed race as a recorded history plus its case file (verdicts, title, meta)."""
    history, result = seed_race()
    data.mkdir(parents=True, exist_ok=True)
    history.to_jsonl(data / "seed_race.history.jsonl")
    case = {"title": SEED_TITLE, "meta": SEED_META, "result": result.to_dict()}
    (data / "seed_race.case.json").write_text(json.dumps(case, indent=2) + "\n")


if __name__ == "__main__":
    write_seed_race()
