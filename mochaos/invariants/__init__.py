"""The ten invariants of DESIGN §6: pure functions from a recorded History to Verdicts.

``ALL`` lists them in the design's order and ``get`` finds one by ID. ``Checker``
judges a growing history incrementally (the scenario's monitor and settle);
``evaluate`` judges a whole history at once, continuously (``final=False``) or at
settle time (``final=True``), with the same result as feeding it entry by entry.
"""

from __future__ import annotations

from mochaos.invariants.base import InvariantBase
from mochaos.invariants.checker import Checker, evaluate
from mochaos.invariants.options import validate_options
from mochaos.invariants.registry import ALL, get

__all__ = ["ALL", "Checker", "InvariantBase", "evaluate", "get", "validate_options"]
