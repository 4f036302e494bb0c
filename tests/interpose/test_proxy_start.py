"""Starting the interposer: :meth:`Interposer.start` returns only once both files it reads
(the proxy's address and the control API's) are written, in whatever order they appear.

The process here is a stand-in (a shell script), named as such: what is under test is the
caller's wait, and the real binary writes both files within microseconds, too close to
test the order against (its own Go test checks that it writes the control file last).
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from mochaos.interpose import proxy as proxy_module
from mochaos.interpose.proxy import Interposer

# The stand-in writes the control file first and the address a moment later: a caller
# that took the control file alone as the sign of readiness reads no address.
LATE_ADDRESS = """#!/bin/sh
while [ "$#" -gt 0 ]; do
  case "$1" in
    --addr-out) addr="$2"; shift ;;
    --control-out) control="$2"; shift ;;
  esac
  shift
done
echo 127.0.0.1:1 > "$control"
sleep 0.5
echo 127.0.0.1:2 > "$addr.tmp" && mv "$addr.tmp" "$addr"
exec sleep 60
"""


@pytest.fixture
def late_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "interposer"
    script.write_text(LATE_ADDRESS)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(proxy_module, "binary", lambda: script)
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "state"))
    return script


def test_start_waits_for_the_address_as_well_as_the_control_file(late_address, tmp_path):
    proxy = Interposer(tmp_path / "run", upstream_kubeconfig=tmp_path / "kubeconfig")
    try:
        proxy.start()
        assert (proxy.address, proxy._control) == ("127.0.0.1:2", "127.0.0.1:1")
    finally:
        proxy.stop(grace=1)
    assert proxy.pid is None
