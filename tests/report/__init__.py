"""Tests of chaos.report over hand-written and recorded histories."""
