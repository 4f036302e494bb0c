"""The waits of the kind path are built from the operator's intervals and MatrixOne's start-up."""

from __future__ import annotations

from mochaos.matrixone import waits as w


def test_a_claim_beyond_max_idle_waits_for_a_new_cn_to_start_and_register() -> None:
    waits = w.Timings()
    registered = w.MO_START + w.STORE_CACHE_REFRESH + w.CNSTORE_RETRY + w.BIND_RETRY
    assert waits.new_cn >= (registered + w.IMAGE_PULL) * w.MARGIN
    # The engine's model-sized wait (60 s + 30 s) would give up before a real CN registers.
    assert waits.new_cn > 90


def test_idle_pods_may_come_only_after_a_drain_held_by_kruise() -> None:
    # The pool scales an Idle pod in on a Pending bind; kruise counts it until its drain ends
    # (44 s and 104 s measured), and only then does its replacement start.
    for timings in (w.Timings(), w.local()):
        assert timings.pool_ready >= timings.new_cn + 104 * w.MARGIN
    assert w.local().pool_ready < w.Timings().pool_ready


def test_a_preloaded_image_shortens_every_start_but_not_the_operators_intervals() -> None:
    loaded, pulled = w.Timings(image_pull=0), w.Timings()
    assert loaded.new_cn < pulled.new_cn
    assert loaded.base_ready < pulled.base_ready
    assert loaded.deletion_cost == pulled.deletion_cost
    assert loaded.operator_restart == pulled.operator_restart


def test_sessions_show_as_deletion_cost_within_one_cnstore_resync() -> None:
    assert w.Timings().deletion_cost >= w.CNSTORE_RESYNC + w.QUERY_TIMEOUT


def test_a_restarted_operator_may_wait_a_whole_lease() -> None:
    assert w.Timings().operator_restart >= w.LEASE_DURATION + w.POD_START
