"""Every invariant, found by discovery: each module of this package that defines
``INVARIANT`` registers it. ``ALL`` is them in report order (``rank``, then ID); ``get``
finds one by ID. Adding an invariant is adding its module (docs/invariants.md)."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Iterable
from pathlib import Path

from mochaos.invariants.base import InvariantBase

PACKAGE = __name__.rpartition(".")[0]
HOME = Path(__file__).resolve().parent
FRAMEWORK = frozenset({"base", "checker", "facts", "judged", "options", "registry", "verdict"})
"""The package's modules that are machinery, not invariants."""


def discover(extra: Iterable[Path] = ()) -> tuple[InvariantBase, ...]:
    """The ``INVARIANT`` of every module of this package (and of the folders ``extra``,
    imported as modules of this package), in report order.

    ValueError when two share an ID or a module's ``INVARIANT`` is not an InvariantBase.
    """
    found: dict[str, InvariantBase] = {}
    for folder in (HOME, *extra):
        for info in pkgutil.iter_modules([str(folder)]):
            if info.name in FRAMEWORK or info.name.startswith("_"):
                continue
            module = _load(folder, info.name)
            invariant = getattr(module, "INVARIANT", None)
            if invariant is None:
                continue
            if not isinstance(invariant, InvariantBase):
                raise ValueError(f"{module.__name__}.INVARIANT is not an InvariantBase")
            if invariant.id in found:
                raise ValueError(f"invariant ID {invariant.id!r} defined twice ({module.__name__})")
            found[invariant.id] = invariant
    return tuple(sorted(found.values(), key=lambda inv: (inv.rank, inv.id)))


def _load(folder: Path, name: str):
    qualified = f"{PACKAGE}.{name}"
    if folder == HOME:
        return importlib.import_module(qualified)
    spec = importlib.util.spec_from_file_location(qualified, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)
    return module


ALL: tuple[InvariantBase, ...] = discover()

_BY_ID = {invariant.id: invariant for invariant in ALL}


def get(invariant_id: str) -> InvariantBase:
    """The invariant with this ID; KeyError naming the known IDs otherwise."""
    try:
        return _BY_ID[invariant_id]
    except KeyError:
        raise KeyError(f"unknown invariant {invariant_id!r}; known: {', '.join(_BY_ID)}") from None
