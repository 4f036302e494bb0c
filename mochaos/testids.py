"""A test's id as reports and shards use it: the same whatever folder its package is
installed in (a virtualenv under the working folder, another Python version)."""

from __future__ import annotations


def portable_nodeid(nodeid: str) -> str:
    """``nodeid`` without where its package is installed: the same on every machine.

    An installed package (a venv in the checkout, another Python version) is named as
    imported: ``.venv/lib/python3.11/site-packages/mochaos/suites/t.py::x`` becomes
    ``mochaos/suites/t.py::x``.
    """
    path, sep, rest = nodeid.partition("::")
    return path.replace("\\", "/").rpartition("site-packages/")[2] + sep + rest


def scenario_name(nodeid: str) -> str:
    """``<test file name>::<test>``: a test's name whatever the rootdir or install place."""
    path, sep, rest = portable_nodeid(nodeid).partition("::")
    return path.rsplit("/", 1)[-1] + sep + rest
