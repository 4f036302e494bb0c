"""Operator log lines are placed in time by their own stamp only when it is fine enough."""

from mochaos.observe.recorder import log_time


def test_a_whole_second_stamp_gives_way_to_the_receive_time():
    assert log_time(1_764_556_980.0, 1_764_556_980.731) == 1_764_556_980.731


def test_a_sub_second_stamp_is_kept():
    assert log_time(1_764_556_980.125, 1_764_556_980.731) == 1_764_556_980.125


def test_a_line_without_a_stamp_is_placed_when_read():
    assert log_time(None, 5.5) == 5.5
