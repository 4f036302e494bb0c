"""Tests of mochaos.explore: points, faults, the exploration record and its runner."""
