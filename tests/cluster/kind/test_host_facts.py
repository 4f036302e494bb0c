"""Which host workarounds a machine needs, read from its kernel's answers."""

from __future__ import annotations

from pathlib import Path

from mochaos.cluster.kind.host_facts import HostFacts, fail_cgroup_v1


def _host(tmp_path: Path, *, capbnd: str, unified: bool) -> HostFacts:
    status = tmp_path / "status"
    status.write_text(f"Name:\tpython\nCapBnd:\t{capbnd}\n")
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    if unified:
        (cgroup / "cgroup.controllers").write_text("cpu memory pids\n")
    return HostFacts.read(proc=status, cgroup=cgroup)


def test_our_build_machines_need_the_shim_restrict_oom_score_adj_and_failcgroupv1(
    tmp_path: Path,
) -> None:
    host = _host(tmp_path, capbnd="000001fffeffffff", unified=False)
    assert host.missing_caps == ("CAP_SYS_RESOURCE",)
    assert host.cgroup_version == "1"
    assert host.runtime_shim() is not None
    assert "CAP_SYS_RESOURCE" in host.runtime_shim().why
    assert host.restrict_oom_score_adj() is not None
    assert fail_cgroup_v1(host.cgroup_version) is not None


def test_a_host_with_every_capability_and_cgroup_v2_needs_nothing(tmp_path: Path) -> None:
    host = _host(tmp_path, capbnd="000001ffffffffff", unified=True)
    assert host.missing_caps == ()
    assert host.cgroup_version == "2"
    assert host.runtime_shim() is None
    assert host.restrict_oom_score_adj() is None
    assert fail_cgroup_v1(host.cgroup_version) is None


def test_a_missing_capability_other_than_sys_resource_needs_the_shim_only(tmp_path: Path) -> None:
    host = _host(tmp_path, capbnd="000001ffffbfffff", unified=True)  # CAP_SYS_BOOT (22) missing
    assert host.missing_caps == ("CAP_SYS_BOOT",)
    assert host.runtime_shim() is not None
    assert host.restrict_oom_score_adj() is None
