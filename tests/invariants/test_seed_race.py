"""The race of docs/operator-behaviour.md §11.1 as one hand-written history, and its fixed
counterpart.

Claim X (set S1) migrates from pod A to pod B, which claim Z (set S2) holds; S1
is scaled 2 -> 1 during the drain. Upstream the operator deletes the migrating
X and its Finalize retries every 2 s for 90 s; fixed, it deletes Y instead, X's
migration completes, and the epilogue releases everything.
"""

from mochaos.config import CheckOptions
from mochaos.invariants import evaluate

from .design import DESIGN
from support.builders import HistoryBuilder, bind

OPTIONS = CheckOptions(grace=15, migration_timeout=300)
SEED_FAILURES = {
    "finalizer-completes",
    "no-label-residue",
    "scalein-skips-migrating",
    "retry-budget",
}


def race_prefix() -> HistoryBuilder:
    """Up to the scale-in: X migrating A -> B (Z's pod), A draining, S1 scaled to 1."""
    b = HistoryBuilder()
    b.at(0).claimset("S1", replicas=2, by="create")
    b.claimset("S2", replicas=1, by="create")
    for pod in ("A", "B", "C", "D"):
        b.pod(pod, phase="Idle")
    bind(b.at(3), "X", "A", claimset="S1")
    bind(b, "Y", "C", claimset="S1")
    bind(b, "Z", "B", claimset="S2")
    b.at(3.5).claimset("S1", status_replicas=2, ready=2)
    b.claimset("S2", status_replicas=1, ready=1)
    migrate = {"source": "A", "target": "B"}
    b.at(10).claim("X", pod="B", source="A", by="request_migration", params=migrate)
    b.at(10.5).pod("B", claimed_by="X")
    b.claim("X", store="B")
    b.log("migrate claimed pod", name="X", source="A", target="B")
    b.at(25.5).log("start draining source pod", name="X", pod="A")
    b.pod("A", phase="Draining", claimed_by=None)
    b.at(30).claimset("S1", replicas=1, by="scale_claimset", params={"replicas": 1})
    b.at(30.1).log("sort claims to scale-in", name="S1")
    return b


def upstream() -> HistoryBuilder:
    """The operator deletes X; its Finalize skips B (held by Z) and retries for 90 s."""
    b = race_prefix()
    b.at(30.2).claim("X", deleting=True)
    b.at(30.3).claimset("S1", status_replicas=1, ready=1)
    for i in range(46):
        t = 30.3 + 2 * i
        b.at(t).log("finalize CNClaim", name="X")
        b.log("skip reclaim, pod still claimed by other CNClaim", name="X", pod="B", holder="Z")
        b.log("does not complete finalizing, retry", name="X")
        if i % 5 == 0:
            b.action("request_migration", kind="CNClaim", name="X", params={"target": "B"})
    b.at(40).pod("A", phase="Idle")
    return b


def fixed() -> HistoryBuilder:
    """Y is deleted instead, X's migration completes, the epilogue releases every pod."""
    b = race_prefix()
    b.at(30.2).claim("Y", deleting=True)
    b.at(30.3).log("finalize CNClaim", name="Y")
    b.log("finalize CNClaim, reclaim bound CN", name="Y", cn="C")
    b.pod("C", phase="Draining", claimed_by=None)
    b.log("does not complete finalizing, retry", name="Y")
    b.claimset("S1", status_replicas=1, ready=1)
    b.at(32.3).log("finalize CNClaim", name="Y")
    b.log("resource finalizing complete, remove finalizer", name="Y")
    b.claim("Y", finalizers=[])
    b.delete("CNClaim", "Y")
    b.at(40).pod("A", phase="Idle")
    b.at(45).claim("X", source=None)
    b.at(47).pod("C", phase="Idle")
    b.at(100).marker("epilogue")
    b.claimset("S1", replicas=0, by="scale_claimset", params={"replicas": 0})
    b.claimset("S2", replicas=0, by="scale_claimset", params={"replicas": 0})
    b.at(100.2).claim("X", deleting=True)
    b.claim("Z", deleting=True)
    b.claimset("S1", status_replicas=0, ready=0)
    b.claimset("S2", status_replicas=0, ready=0)
    b.at(100.3).log("finalize CNClaim", name="X")
    b.log("release pod label, pod claimed by other CNClaim", name="X", pod="B", holder="Z")
    b.pod("B", claimed_by="Z")
    b.claim("X", finalizers=[])
    b.delete("CNClaim", "X")
    b.at(100.4).log("finalize CNClaim", name="Z")
    b.log("finalize CNClaim, reclaim bound CN", name="Z", cn="B")
    b.pod("B", phase="Draining", claimed_by=None)
    b.at(102.4).log("finalize CNClaim", name="Z")
    b.claim("Z", finalizers=[])
    b.delete("CNClaim", "Z")
    b.at(117).pod("B", phase="Idle")
    b.at(160).marker("settled")
    return b


def failed(history_builder: HistoryBuilder, *, final: bool) -> set[str]:
    verdicts = evaluate(history_builder.build(), OPTIONS, final=final)
    return {v.invariant for v in verdicts if v.status == "fail"}


def test_upstream_race_fails_the_seed_invariants():
    assert failed(upstream(), final=False) == SEED_FAILURES
    verdicts = {v.invariant: v for v in evaluate(upstream().build(), OPTIONS, final=False)}
    assert verdicts["scalein-skips-migrating"].violation.t == 30.2
    assert verdicts["no-label-residue"].violation.t == 45.2
    assert verdicts["retry-budget"].violation.t == 30.3 + 20
    assert verdicts["finalizer-completes"].violation.t == 90.2
    assert verdicts["finalizer-completes"].violation.objects == ("CNClaim/X", "Pod/B")


def test_upstream_race_at_settle_also_shows_the_disagreement_on_b():
    assert failed(upstream(), final=True) == SEED_FAILURES | {"pod-claim-agreement"}


def test_fixed_history_passes_every_invariant():
    verdicts = evaluate(fixed().build(), OPTIONS, final=True)
    assert {v.invariant: v.status for v in verdicts} == {v.invariant: "pass" for v in verdicts}
    assert {v.invariant: v.note for v in verdicts if v.invariant in DESIGN} == {
        "finalizer-completes": "3 claim deletion(s) seen",
        "no-label-residue": "6 label breach(es) seen",
        "single-binding": "no operator write referenced a pod held by another live claim",
        "bound-has-pod": "0 breach(es) seen",
        "scalein-skips-migrating": (
            "no operator deletion of a migrating claim with a non-migrating sibling"
        ),
        "migration-completes": "1 migration(s) seen",
        "replicas-converge": "5 scale change(s) seen",
        "retry-budget": "5 'finalize CNClaim' and 0 error record(s), within budget",
        "pod-claim-agreement": "every Bound pod and live Bound claim agree in the final state",
        "no-leaked-pods": "pool pods released and no CNClaim left at t=160",
    }


def test_upstream_race_messages_name_what_broke():
    verdicts = {v.invariant: v for v in evaluate(upstream().build(), OPTIONS, final=True)}
    messages = {k: v.violation.message for k, v in verdicts.items() if v.failed}
    assert messages == {
        "finalizer-completes": (
            "CNClaim X still exists 60s after its deletion started (finalizers: "
            "matrixorigin.io/cn-claim-manager; pods claimed-by=X: B)"
        ),
        "no-label-residue": (
            "pod B labelled claimed-by=X for over 15s while CNClaim X is being deleted"
        ),
        "scalein-skips-migrating": (
            "CNClaim X deleted by the operator while migrating (A -> B); non-migrating "
            "CNClaim Y of claim set S1 was kept"
        ),
        "retry-budget": (
            "11 'finalize CNClaim' records for CNClaim X within 60s (budget 10); "
            "last: finalize CNClaim"
        ),
        "pod-claim-agreement": (
            "CNClaim Z is Bound but pod B is claimed-by=X (2 disagreement(s) in the final state)"
        ),
    }
    for verdict in verdicts.values():
        assert verdict.severity == "error"
