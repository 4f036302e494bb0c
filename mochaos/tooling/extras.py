"""Optional Python dependencies: import one or fail in one line naming the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from mochaos.errors import InfraError


def import_extra(module: str, *, extra: str = "kind", why: str = "") -> ModuleType:
    """Import ``module``; InfraError ``… install mo-chaos[<extra>]`` when it is not installed.

    A missing optional package is a set-up problem of this machine, never a
    Docker, network or operator problem, and is reported as such.
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        need = f" ({why})" if why else ""
        raise InfraError(
            f"Python module {module} is not installed{need}",
            hint=f"install mo-chaos[{extra}], e.g. `pip install -e '.[{extra}]'`",
        ) from err
