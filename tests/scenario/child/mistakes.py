"""Run by tests/scenario/test_honest_end.py as a child pytest on ``model:fixed``: the
mistakes a suite author makes that an earlier mo-chaos reported as passed, each a test
that tested nothing. None may be reported as passed.

Not collected by ``pytest tests/`` (its name does not start with ``test_``).
"""

from __future__ import annotations

import contextlib

import pytest

from mochaos.ctrl.objects import SESSIONS_ANNOTATION
from mochaos.errors import Inconclusive
from mochaos.scenario import Scenario, claim_bound, delete_pod, named, source_draining

pytestmark = pytest.mark.scenario


def no_sessions_on(pod: str):
    """Nobody said how many sessions ``pod`` serves: true until the test itself says so."""
    return named(
        f"pod {pod} has no sessions annotation",
        lambda s: SESSIONS_ANNOTATION not in (
            ((s.get("Pod", pod) or {}).get("metadata") or {}).get("annotations") or {}
        ),
    )  # fmt: skip


def bound_claim(sc: Scenario) -> tuple[str, str, str]:
    """A pool of two idle pods and a claim bound to one: (claim, its pod, an idle pod)."""
    sc.topology.pool("pool", max_idle=2)
    x = sc.topology.claim("x")
    pod = sc.topology.pod_of(x)
    idle = next(p for p in sc.topology.idle_pods("pool", at_least=1) if p != pod)
    return x, pod, idle


def test_never_asks_for_the_verdict(scenario: Scenario) -> None:
    """A fault that lands after its trigger stopped holding, and no settle, epilogue or
    verdict: only a verdict can tell."""
    sc = scenario
    _, _, idle = bound_claim(sc)
    unmarked = sc.when(no_sessions_on(idle), timeout=sc.waits.bind)
    sc.topology.set_sessions(idle, 1)  # the test itself ends the state it waited for
    sc.inject(delete_pod(idle), trigger=unmarked)


def test_a_refused_fault(scenario: Scenario) -> None:
    """The apiserver refuses the fault (no such pod): it never happened."""
    sc = scenario
    bound_claim(sc)
    sc.inject(delete_pod("no-such-pod"))


def test_a_refused_fault_while_a_session_holds_the_drain(scenario: Scenario) -> None:
    """The fault is refused while the migration's source drains on a session the test
    would have closed next: the held session is the test's, not the operator's doing."""
    sc = scenario
    x, source, _ = bound_claim(sc)
    sc.topology.set_sessions(source, 1)
    sc.agent.request_migration(x)
    draining = sc.when(source_draining(x, source), timeout=sc.waits.migration_phase)
    sc.inject(delete_pod("no-such-pod"), trigger=draining)
    sc.topology.set_sessions(source, 0)  # never reached: the refusal cut the body short


def test_a_refused_fault_caught(scenario: Scenario) -> None:
    """The same, with the test swallowing what the refusal raised."""
    sc = scenario
    bound_claim(sc)
    with contextlib.suppress(Inconclusive):
        sc.inject(delete_pod("no-such-pod"))


def test_a_trigger_that_is_not_what_when_returned(scenario: Scenario) -> None:
    """A predicate passed as the trigger: no observation, nothing to check the window on."""
    sc = scenario
    x, pod, _ = bound_claim(sc)
    sc.inject(delete_pod(pod), trigger=claim_bound(x))


def test_the_agents_gated_request_misses_its_window(scenario: Scenario) -> None:
    """The platform agent's request, gated like a fault, lands after its trigger ended."""
    sc = scenario
    x, _, idle = bound_claim(sc)
    unmarked = sc.when(no_sessions_on(idle), timeout=sc.waits.bind)
    sc.topology.set_sessions(idle, 1)
    sc.agent.request_migration(x, target=idle, trigger=unmarked)


def test_an_empty_body(scenario: Scenario) -> None:
    """Nothing built, nothing injected: nothing to judge."""
