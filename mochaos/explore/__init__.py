"""Exploration: fault schedules generated from what the operator does (Sieve-style).

A fault-free *learn run* of a named workload gives the injection points (the distinct
state transitions the operator caused, by role); every (point × fault) case then runs in
its own namespace, is judged by every invariant, and failures are grouped by signature.
See docs/exploring.md.
"""
