"""Building the operator's manager from a checkout: only the modules the build needs are
fetched, and a failed build is shared with the workers that waited for it.

Real Go on small modules made here, with the module proxy switched off (``GOPROXY=off``:
a module that is not on disk stands for one the proxy refuses)."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from mochaos.errors import BuildError
from mochaos.operator.provenance.checkout import Checkout
from mochaos.operator.provenance.manager_build import build_manager

from support.polling import wait_until

GO = shutil.which("go")
needs_go = pytest.mark.skipif(GO is None, reason="needs Go to build the checkouts")


@pytest.fixture(autouse=True)
def _offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("GOPROXY", "off")
    monkeypatch.setenv("GOFLAGS", "")


def _checkout(tree: Path, main: str, *, placeholder: bool = True) -> Checkout:
    """A workspace (go.work) whose main module requires a local module; with
    ``placeholder``, that module's go.mod names a module version that exists nowhere
    (the build never needs it)."""
    (tree / "dep").mkdir(parents=True)
    need = "\nrequire example.com/missing v0.0.0\n" if placeholder else ""
    (tree / "dep" / "go.mod").write_text(f"module example.com/dep\n\ngo 1.21\n{need}")
    (tree / "dep" / "dep.go").write_text('package dep\n\nfunc Name() string { return "dep" }\n')
    (tree / "cmd" / "operator").mkdir(parents=True)
    (tree / "cmd" / "operator" / "main.go").write_text(main)
    (tree / "go.mod").write_text(
        "module example.com/operator\n\ngo 1.21\n\nrequire example.com/dep v1.0.0\n\n"
        "replace example.com/dep => ./dep\n"
    )
    (tree / "go.work").write_text("go 1.21\n\nuse .\n")
    return Checkout(path=tree, commit="a" * 40, dirty="")


MAIN = 'package main\n\nimport "example.com/dep"\n\nfunc main() { println(dep.Name()) }\n'
BROKEN = "package main\n\nfunc main() { undefined() }\n"


@needs_go
def test_a_module_the_graph_names_but_the_build_never_needs_is_not_fetched(tmp_path: Path):
    # red with `go mod download` as the first step: "module lookup disabled by GOPROXY=off"
    # for example.com/missing (on the real proxy: "This module version is not available").
    manager = build_manager(_checkout(tmp_path / "tree", MAIN))
    assert manager.is_file() and os.access(manager, os.X_OK)


def _counting_go(bin_dir: Path, calls: Path) -> None:
    """``go`` first on PATH: notes each call but ``go env``, takes a second, runs the real
    Go."""
    bin_dir.mkdir()
    script = bin_dir / "go"
    script.write_text(
        f'#!/bin/sh\ncase "$1" in env) ;; *) echo "$1" >> {calls}; sleep 1;; esac\nexec {GO} "$@"\n'
    )
    script.chmod(0o755)


@needs_go
def test_a_build_that_failed_while_a_worker_waited_is_not_run_again_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    calls = tmp_path / "calls"
    _counting_go(tmp_path / "bin", calls)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    checkout = _checkout(tmp_path / "tree", BROKEN, placeholder=False)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            build_manager(checkout)
        except BaseException as err:  # collected for the asserts
            errors.append(err)

    first = threading.Thread(target=worker)
    first.start()
    wait_until(lambda: calls.is_file(), what="the first worker's build running", timeout=30)
    second = threading.Thread(target=worker)  # arrives while the first one builds
    second.start()
    first.join(timeout=120)
    second.join(timeout=120)
    assert len(errors) == 2 and all(isinstance(e, BuildError) for e in errors), errors
    assert "while this one waited" in str(errors[1]), errors[1]
    steps = calls.read_text().split()
    assert steps.count("build") == 1, steps  # red: the waiter ran the failing build again

    # A run that starts after the failure tries afresh (a flaky proxy may be back).
    with pytest.raises(BuildError) as later:
        build_manager(checkout)
    assert "while this one waited" not in str(later.value)
    assert calls.read_text().split().count("build") == 2
