"""The waits of the kind path are built from the operator's intervals and MatrixOne's start-up."""

from __future__ import annotations

from mochaos.matrixone import waits as w


def test_a_claim_beyond_max_idle_waits_for_a_new_cn_to_start_and_register() -> None:
    waits = w.Timings()
    registered = w.MO_START + w.STORE_CACHE_REFRESH + w.CNSTORE_RETRY + w.BIND_RETRY
    assert waits.new_cn >= (registered + w.IMAGE_PULL) * w.MARGIN
    # The engine's model-sized wait (60 s + 30 s) would give up before a real CN registers.
    assert waits.new_cn > 90
    assert waits.pool_ready == waits.new_cn


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
