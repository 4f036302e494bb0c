"""The operator target registry: every bad --operator value is one line, before any test."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from mochaos.errors import UsageError
from mochaos.operator import REGISTRY, parse_target, usage


def test_every_scheme_is_listed_in_the_usage_line():
    assert all(s.usage in usage() for s in REGISTRY.values())


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bogus", "unknown operator target 'bogus'"),
        ("model:nope", "unknown model profile 'nope'"),
        ("binary:", "binary: target needs a path"),
        ("binary:/no/such/manager", "is not an executable file"),
        ("image:", "image: target needs a reference"),
        ("installed:x", "installed takes no value"),
        ("source:/no/such/checkout", "is not a directory"),
    ],
)
def test_bad_targets_are_usage_errors(spec: str, message: str):
    with pytest.raises(UsageError, match=message):
        parse_target(spec, {})


def _manager(tmp_path: Path) -> Path:
    exe = tmp_path / "manager"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return exe


def test_the_time_scale_is_refused_for_a_real_manager(tmp_path: Path):
    options = {"time_scale": 0.2, "operator_crds": tmp_path}
    with pytest.raises(UsageError, match="intervals are compiled in"):
        parse_target(f"binary:{_manager(tmp_path)}", options)


def test_the_model_takes_the_time_scale():
    target = parse_target("model:upstream", {"time_scale": 0.2})
    assert target.time_scaled and target.spec == "model:upstream"


def test_a_binary_needs_the_operators_crds(tmp_path: Path):
    with pytest.raises(UsageError, match="--operator-crds"):
        parse_target(f"binary:{_manager(tmp_path)}", {})


def test_real_managers_run_on_the_local_cluster_only(tmp_path: Path):
    options = {"operator_crds": tmp_path, "cluster": "kind"}
    with pytest.raises(UsageError, match="run on the local cluster"):
        parse_target(f"binary:{_manager(tmp_path)}", options)


def test_a_binary_target_names_its_build_by_digest(tmp_path: Path):
    target = parse_target(f"binary:{_manager(tmp_path)}", {"operator_crds": tmp_path})
    assert target.version.startswith("manager@sha256:")
    assert target.crds == "operator" and not target.time_scaled
