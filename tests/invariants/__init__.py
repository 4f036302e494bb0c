"""Tests of chaos.invariants over hand-written histories."""
