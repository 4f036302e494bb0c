"""no-pod-churn: a pool does not kill pods right after they appeared, unless a Pending claim's
bind explains it (the real pool's double count, one pod per bind)."""

from mochaos.config import CheckOptions
from mochaos.invariants import IncrementalChecker, get
from mochaos.observe.churn import churned_pods

from support.builders import HistoryBuilder

INVARIANT = get("no-pod-churn")
OPTIONS = CheckOptions(churn_budget=0, retry_window=60)


def churn(b: HistoryBuilder, pod: str, *, t: float, life: float = 0.4, how: str = "phase") -> None:
    """A pod the CloneSet creates and the pool marks before the store ever says Idle."""
    b.at(t).pod(pod, phase="Unknown")
    b.at(t + life)
    if how == "phase":
        b.pod(pod, phase="Terminating")
    elif how == "delete":
        b.pod(pod, deleting=True)
    else:
        b.pod(pod, kruise="PreparingDelete")


def pending_bind(b: HistoryBuilder, claim: str, pod: str, *, t: float) -> None:
    """A claim that waited Pending, bound at ``t``."""
    b.at(t - 10).claim(claim, phase="Pending")
    b.at(t).pod(pod, phase="Bound", claimed_by=claim)
    b.claim(claim, pod=pod, phase="Bound")


def test_a_pool_that_kills_the_replacements_fails_at_the_first_one_nothing_explains():
    # race on the real manager at 2301e3b: a Pending bind's extra pod, then a drained pod's
    # replacement killed 0.4 s after kruise made it.
    b = HistoryBuilder()
    b.pod("old", phase="Idle")
    pending_bind(b, "s2-x", "bound", t=100)
    churn(b, "extra", t=100.1, life=0.3)
    b.at(120).pod("old", phase="Terminating")
    churn(b, "replacement", t=172.1)
    killed = b.seq
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "fail"
    assert (verdict.violation.t, verdict.violation.seq) == (172.5, killed)
    assert verdict.violation.objects == ("Pod/replacement",)
    assert verdict.violation.message == (
        "pool pool: 1 pod(s) killed right after they appeared, no Pending claim's bind to "
        "explain them, within 60s (budget 0): replacement (phase Terminating 0.4s after it "
        "appeared)"
    )
    assert verdict.bugs == ("pool-churn",)
    found = churned_pods(b.build())
    assert [(c.pod, c.explained_by) for c in found] == [("extra", "s2-x"), ("replacement", "")]


def test_explained_pods_pods_that_served_and_pods_killed_later_pass():
    b = HistoryBuilder()
    pending_bind(b, "a", "pa", t=10)
    churn(b, "extra-a", t=10.1)  # explained by a's bind
    pending_bind(b, "c", "pc", t=30)
    churn(b, "extra-c", t=29.5, how="delete")  # the bind may arrive just after the pod
    for i in range(5):  # scale-in of Idle and drained Bound pods: they served
        b.at(40 + i).pod(f"idle-{i}", phase="Idle")
        b.pod(f"idle-{i}", phase="Terminating")
        b.pod(f"idle-{i}", deleting=True)
    b.at(50).pod("bound", phase="Bound", claimed_by="X")
    b.pod("bound", phase="Draining")
    b.pod("bound", deleting=True)
    churn(b, "late", t=60, life=30)  # demand dropped before it could serve
    verdict = INVARIANT.check(b.build(), OPTIONS)
    assert verdict.status == "pass", verdict
    assert verdict.note == (
        "0 pod(s) killed right after they appeared with nothing to explain them, within "
        "budget (3 marked before serving, 2 explained by a Pending claim's bind)"
    )


def test_a_bind_explains_one_pod_and_only_one_near_it():
    b = HistoryBuilder()
    pending_bind(b, "a", "pa", t=10)
    churn(b, "one", t=10.1)
    churn(b, "two", t=10.2)
    churn(b, "far", t=40)
    found = {c.pod: c.explained_by for c in churned_pods(b.build())}
    assert found == {"one": "a", "two": "", "far": ""}
    assert INVARIANT.check(b.build(), CheckOptions(churn_budget=1)).status == "fail"
    assert INVARIANT.check(b.build(), CheckOptions(churn_budget=2)).status == "pass"


def test_over_budget_the_message_lists_every_pod_of_the_window():
    b = HistoryBuilder()
    churn(b, "a", t=10, life=0.5)
    churn(b, "b", t=20, life=1.5, how="delete")
    verdict = INVARIANT.check(b.build(), CheckOptions(churn_budget=1, retry_window=60))
    assert verdict.status == "fail"
    assert (verdict.violation.t, verdict.violation.objects) == (21.5, ("Pod/a", "Pod/b"))
    assert verdict.violation.message.endswith(
        "within 60s (budget 1): a (phase Terminating 0.5s after it appeared), "
        "b (deletionTimestamp 1.5s after it appeared)"
    )


def test_within_budget_the_note_counts_every_pod_nothing_explains():
    b = HistoryBuilder()
    for i in range(3):
        churn(b, f"p-{i}", t=i * 10)
    verdict = INVARIANT.check(b.build(), CheckOptions(churn_budget=3))
    assert (verdict.status, verdict.note) == (
        "pass",
        "3 pod(s) killed right after they appeared with nothing to explain them, within "
        "budget (3 marked before serving, 0 explained by a Pending claim's bind)",
    )


def test_a_pod_marked_just_at_the_stillborn_limit_and_pods_just_a_window_apart_count():
    b = HistoryBuilder()
    churn(b, "five", t=0, life=5)  # CHURN_STILLBORN: killed before it could serve
    assert INVARIANT.check(b.build(), OPTIONS).status == "fail"
    b = HistoryBuilder()
    churn(b, "first", t=0, life=0.5)
    churn(b, "second", t=60, life=0.5)  # marked 60 s after the first: within the window
    verdict = INVARIANT.check(b.build(), CheckOptions(churn_budget=1, retry_window=60))
    assert (verdict.status, verdict.violation.t) == ("fail", 60.5)


def test_open_while_the_last_churned_pod_is_within_its_window_and_decided_once_over_budget():
    budget1 = CheckOptions(churn_budget=1, retry_window=60)
    b = HistoryBuilder()
    b.pod("idle", phase="Idle")
    checker = IncrementalChecker(budget1, (INVARIANT,))
    checker.feed(b.entries)
    assert checker.undecided(1) == []  # nothing churned
    churn(b, "first", t=0, life=0.5)
    checker.feed(b.entries[1:])
    # another churned pod within 60 s of it would exceed the budget
    assert checker.undecided(60.5) == ["no-pod-churn open"]
    assert checker.undecided(60.6) == []
    assert checker.decided(60.6) == []
    churn(b, "second", t=61, life=0.5)  # 61 s after the first: alone in its window
    checker.feed(b.entries[-2:])
    assert checker.verdicts()[0].status == "pass"
    churn(b, "third", t=80, life=0.5)
    checker.feed(b.entries[-2:])
    assert checker.verdicts()[0].violation.t == 80.5
    assert (checker.decided(81), checker.undecided(81)) == (["no-pod-churn"], [])


def test_the_window_slides_pools_count_apart_and_the_time_scale_shrinks_the_thresholds():
    budget1 = CheckOptions(churn_budget=1, retry_window=60)
    b = HistoryBuilder()
    for i, t in enumerate((0, 70, 140)):
        churn(b, f"p-{i}", t=t)
    assert INVARIANT.check(b.build(), budget1).status == "pass"
    b = HistoryBuilder()
    for i in range(2):
        b.at(i).pod(f"a-{i}", phase="Unknown", pool="pool-a")
        b.pod(f"a-{i}", phase="Terminating")
        b.at(i).pod(f"b-{i}", phase="Unknown", pool="pool-b")
        b.pod(f"b-{i}", phase="Terminating")
    assert INVARIANT.check(b.build(), CheckOptions(churn_budget=2)).status == "pass"
    b = HistoryBuilder()
    churn(b, "slow", t=0, life=1.5)  # within 5 s at scale 1, not within 1 s at 0.2
    assert INVARIANT.check(b.build(), OPTIONS).status == "fail"
    assert INVARIANT.check(b.build(), CheckOptions(churn_budget=0, time_scale=0.2)).status == (
        "pass"
    )


def test_pods_the_scenario_deleted_and_pods_outside_a_pool_are_not_churn():
    b = HistoryBuilder()
    for i in range(3):
        b.at(i * 5).pod(f"killed-{i}", phase="Unknown")
        b.action("delete_pod", kind="Pod", name=f"killed-{i}", intent=True)
        b.pod(f"killed-{i}", deleting=True)
        b.at(i * 5 + 1).pod(f"log-{i}", phase="", pool=None)
        b.pod(f"log-{i}", deleting=True)
    assert churned_pods(b.build()) == []
    assert INVARIANT.check(b.build(), OPTIONS).status == "pass"


def test_each_churned_pod_counts_once_whatever_marks_it_next():
    b = HistoryBuilder()
    churn(b, "a", t=0, how="kruise")
    b.pod("a", phase="Terminating")
    b.pod("a", deleting=True)
    b.delete("Pod", "a")
    found = churned_pods(b.build())
    assert [(c.pod, c.how) for c in found] == [("a", "PreparingDelete")]
