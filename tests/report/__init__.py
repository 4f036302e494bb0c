"""Tests of mochaos.report over hand-written and recorded histories."""
