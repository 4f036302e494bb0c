"""MatrixOne faults through the one write path: a component the operator dials is made
unreachable by the target's environment, recorded as the fault with its typed period, dated
by a probe write when a state triggers it, brought back when its seconds pass, when the
scenario releases it, or at the end of the test's body — never left behind. One the
environment could not land is inconclusive, like a refused write."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from mochaos.ctrl.mo_components import HAKEEPER, LOCK_SERVICE, QUERY
from mochaos.errors import Inconclusive, InfraError, UsageError
from mochaos.faults import RESTORE_MATRIXONE, hakeeper_down, lockservice_down, query_down
from mochaos.observe.history import MATRIXONE_FAULT, ActionRecord, PeriodEdge, State
from mochaos.scenario import named
from mochaos.scenario._engine import Scenario
from mochaos.scenario._gate import Fired

from support.builders import HistoryBuilder
from support.polling import wait_until
from support.writes_standin import at_rv, scripted_writes


class Environment:
    """A target's MatrixOne that notes what it was asked (down / up, in order)."""

    def __init__(self, components=(HAKEEPER, LOCK_SERVICE, QUERY), refuse: set[str] = frozenset()):
        self.components = components
        self.calls: list[tuple[str, str]] = []
        self.refuse = refuse
        self.fail_up = 0

    def down(self, component: str, *, how: str) -> str:
        if component in self.refuse:
            raise Inconclusive(f"{component} could not be made unreachable: nothing runs there")
        self.calls.append(("down", f"{component} {how}"))
        return f"127.1.0.2 ({component})"

    def up(self, component: str) -> None:
        if self.fail_up:
            self.fail_up -= 1
            raise InfraError("MatrixOne double not reachable")
        self.calls.append(("up", component))


def _writes(env: Environment | None, *answers):
    operator = SimpleNamespace(matrixone=env, interposer=None)
    return scripted_writes(*answers, operator=operator)


def _periods(recorder) -> list[tuple[str, str, str]]:
    return [(e.edge, e.subject, e.reason) for e in recorder.history().period_edges(MATRIXONE_FAULT)]


def test_a_fault_is_recorded_with_its_period_and_brought_back_after_its_seconds():
    env = Environment()
    writes, recorder, kube = _writes(env)
    record = writes.inject(hakeeper_down(seconds=0.3), state=State())
    assert (record.action, record.kind, record.name, record.fault) == (
        "hakeeper_down", "MatrixOne", HAKEEPER, "hakeeper-down",
    )  # fmt: skip
    assert record.params == {"seconds": 0.3, "how": "refuse", "component": HAKEEPER,
                             "at": "127.1.0.2 (hakeeper)"}  # fmt: skip
    assert env.calls == [("down", "hakeeper refuse")]
    assert kube.sent == []  # no trigger: nothing to date, no write at all
    wait_until(lambda: ("up", HAKEEPER) in env.calls, what="HAKeeper back", timeout=10)
    wait_until(lambda: len(_periods(recorder)) == 2, what="the period's end", timeout=10)
    assert _periods(recorder) == [("start", HAKEEPER, "refuse"), ("end", HAKEEPER, "")]
    (back,) = [a for a in recorder.history() if isinstance(a, ActionRecord)
               and a.action == RESTORE_MATRIXONE]  # fmt: skip
    assert (back.kind, back.name, back.params) == (
        "MatrixOne", HAKEEPER, {"fault": "hakeeper-down", "component": HAKEEPER},
    )  # fmt: skip
    assert writes.down == {} and writes.restore(record.seq) is False


def test_a_query_fault_names_its_pods_component_and_hangs_when_told():
    env = Environment()
    writes, recorder, _ = _writes(env)
    record = writes.inject(query_down("pool-cn-1", how="hang"), state=State())
    assert (record.kind, record.name) == ("Pod", "pool-cn-1")
    assert env.calls == [("down", "query/pool-cn-1 hang")]
    assert writes.restore(record.seq) is True
    assert env.calls[-1] == ("up", "query/pool-cn-1")
    assert _periods(recorder) == [("start", "query/pool-cn-1", "hang"),
                                  ("end", "query/pool-cn-1", "")]  # fmt: skip


def test_a_fault_left_down_is_brought_back_at_the_end_of_the_tests_body():
    env = Environment()
    writes, recorder, _ = _writes(env)
    writes.inject(hakeeper_down(), state=State())  # no seconds: held until released
    writes.inject(lockservice_down(how="hang"), state=State())
    assert [c for c, _ in env.calls] == ["down", "down"]
    scenario = SimpleNamespace(writes=writes, recorder=recorder,
                               operator=SimpleNamespace(interposer=None))  # fmt: skip
    Scenario._let_go(scenario)  # what conclude() and close() run
    assert sorted(c for c in env.calls if c[0] == "up") == [("up", HAKEEPER), ("up", LOCK_SERVICE)]
    assert writes.down == {}
    assert [e.edge for e in recorder.history().period_edges(MATRIXONE_FAULT)].count("end") == 2
    assert "MatrixOne faults released" in [m.label for m in recorder.history().markers()]
    Scenario._let_go(scenario)  # again: nothing left to bring back
    assert len(env.calls) == 4


def test_a_component_that_does_not_come_back_is_tried_again_at_the_end():
    env = Environment()
    env.fail_up = 1
    writes, _, _ = _writes(env)
    record = writes.inject(hakeeper_down(), state=State())
    with pytest.raises(InfraError):
        writes.restore(record.seq)
    assert list(writes.down) == [record.seq]  # still down: not forgotten
    assert writes.restore_all() == 1 and env.calls[-1] == ("up", HAKEEPER)


def test_a_fault_the_environment_could_not_land_is_inconclusive():
    env = Environment(refuse={"query/gone"})
    writes, recorder, _ = _writes(env)
    with pytest.raises(Inconclusive, match="nothing runs there"):
        writes.inject(query_down("gone"), state=State())
    assert list(recorder.history()) == []  # no record, no period: it did not happen
    (missed,) = writes._gate.verify(HistoryBuilder().build())
    assert missed.startswith("query-down gone did not land: query/gone could not be made")


def test_a_landed_fault_gated_by_a_state_is_dated_by_a_probe_write_after_it():
    h = HistoryBuilder()
    h.pod("b", phase="Bound", claimed_by="x")  # rv 101
    bound = named("pod b is Bound", lambda s: (s.get("Pod", "b") or {}) != {})
    writes, recorder, kube = _writes(Environment(), at_rv(102))
    record = writes.inject(hakeeper_down(seconds=60), trigger=Fired("b", None, 101, bound),
                           state=State())  # fmt: skip
    ((method, path, _),) = kube.sent
    assert (method, path) == ("PATCH", "/api/v1/namespaces/ns")  # the probe, after the fault
    assert writes._gate.verify(h.build()) == []
    assert recorder.history()[record.seq].in_window is True
    writes.restore_all()


def test_misuse_is_a_usage_error_before_anything_goes_down():
    with pytest.raises(UsageError, match="needs a target whose MatrixOne can make hakeeper"):
        _writes(None)[0].inject(hakeeper_down(), state=State())
    model_like = Environment(components=(HAKEEPER,))
    with pytest.raises(UsageError, match="lockservice"):
        _writes(model_like)[0].inject(lockservice_down(), state=State())
    assert model_like.calls == []
    env = Environment()
    writes, _, _ = _writes(env)
    writes.inject(hakeeper_down(), state=State())
    with pytest.raises(UsageError, match="hakeeper is already down"):
        writes.inject(hakeeper_down(how="hang"), state=State())
    writes.restore_all()
    with pytest.raises(UsageError, match="how='sideways'"):
        hakeeper_down(how="sideways")
    with pytest.raises(UsageError, match="fault hakeeper-down takes no target"):
        hakeeper_down("pod-a")
    with pytest.raises(UsageError, match="fault query-down takes a Pod name"):
        query_down()


def test_the_release_of_a_matrixone_fault_brings_its_component_back():
    env = Environment()
    writes, recorder, _ = _writes(env)
    record = writes.inject(hakeeper_down(), state=State())
    scenario = SimpleNamespace(writes=writes, recorder=recorder)
    assert Scenario.release(scenario, record) == {"released": True}  # type: ignore[arg-type]
    assert Scenario.release(scenario, record) == {"released": False}  # type: ignore[arg-type]
    ends = [e for e in recorder.history() if isinstance(e, PeriodEdge) and e.edge == "end"]
    assert len(ends) == 1 and ends[0].t <= time.time()


def test_when_back_waits_for_the_end_of_the_faults_period():
    writes, recorder, _ = _writes(Environment())
    scenario = SimpleNamespace(writes=writes, recorder=recorder)
    record = writes.inject(hakeeper_down(seconds=0.2), state=State())
    edge = Scenario.when_back(scenario, record, timeout=10)  # type: ignore[arg-type]
    assert (edge.period, edge.edge, edge.subject) == ("matrixone-fault", "end", HAKEEPER)
    held = writes.inject(hakeeper_down(), state=State())  # no seconds: back only if released
    with pytest.raises(Inconclusive, match="MatrixOne's hakeeper back"):
        Scenario.when_back(scenario, held, timeout=0.2)  # type: ignore[arg-type]
    writes.restore_all()
