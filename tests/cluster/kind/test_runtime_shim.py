"""The capability shim dockerd runs instead of runc: which calls it edits, and how."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mochaos.cluster.kind import runtime_shim
from mochaos.cluster.kind.runtime_shim import (
    bounding_set,
    command_of,
    missing_capabilities,
    spec_to_edit,
    strip_capabilities,
)

OUR_BOUNDING_SET = "CapInh:\t0000000000000000\nCapBnd:\t000001fffeffffff\n"
"""Our build machines: every capability up to 40 but CAP_SYS_RESOURCE (24)."""


def test_the_missing_capability_is_read_from_the_bounding_set() -> None:
    assert missing_capabilities(bounding_set(OUR_BOUNDING_SET)) == ["CAP_SYS_RESOURCE"]
    assert missing_capabilities(0x1FFFFFFFFFF) == []


def test_every_set_loses_the_missing_capability_and_nothing_else() -> None:
    caps = ["CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_SYS_ADMIN"]
    process = {"capabilities": {name: list(caps) for name in runtime_shim.CAP_SETS}}
    assert strip_capabilities(process, ["CAP_SYS_RESOURCE"]) is True
    for name in runtime_shim.CAP_SETS:
        assert process["capabilities"][name] == ["CAP_CHOWN", "CAP_SYS_ADMIN"]
    assert strip_capabilities(process, ["CAP_SYS_RESOURCE"]) is False


def test_create_and_run_edit_the_bundle_and_exec_edits_the_process_file(tmp_path: Path) -> None:
    root = ["--root", "/run/runc", "--log", "/x/log.json", "--log-format", "json"]
    assert command_of([*root, "create", "--bundle", "/b", "id"]) == (
        "create",
        ["--bundle", "/b", "id"],
    )
    assert spec_to_edit([*root, "create", "--bundle", "/b", "id"], tmp_path) == (
        Path("/b/config.json"),
        True,
    )
    assert spec_to_edit(["run", "id"], tmp_path) == (tmp_path / "config.json", True)
    assert spec_to_edit([*root, "exec", "--process", "/p.json", "--detach", "id"], tmp_path) == (
        Path("/p.json"),
        False,
    )
    assert spec_to_edit([*root, "start", "id"], tmp_path) is None
    assert spec_to_edit(["--systemd-cgroup", "delete", "id"], tmp_path) is None


def test_the_shim_edits_the_spec_then_runs_the_real_runc_with_the_same_arguments(
    tmp_path: Path,
) -> None:
    # A stand-in for runc that prints what it got: the arguments and the spec it would read.
    fake = tmp_path / "runc"
    fake.write_text('#!/bin/sh\necho "$@"\ncat "$3/config.json"\n')
    fake.chmod(0o755)
    spec = {"process": {"capabilities": {"bounding": ["CAP_KILL", "CAP_SYS_RESOURCE"]}}}
    (tmp_path / "config.json").write_text(json.dumps(spec))
    status = Path("/proc/self/status").read_text()
    missing = missing_capabilities(bounding_set(status))
    out = subprocess.run(
        [sys.executable, "-I", "-S", runtime_shim.__file__,
         "create", "--bundle", str(tmp_path), "c1"],
        env={**os.environ, runtime_shim.REAL_RUNC_ENV: str(fake)},
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    args, _, written = out.partition("\n")
    assert args == f"create --bundle {tmp_path} c1"
    kept = json.loads(written)["process"]["capabilities"]["bounding"]
    assert kept == [c for c in ["CAP_KILL", "CAP_SYS_RESOURCE"] if c not in missing]
