"""Tests of mochaos.invariants over hand-written histories."""
