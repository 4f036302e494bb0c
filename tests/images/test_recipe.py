"""Image builds: cache keys from every input, entries that count once complete, numbered steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from mochaos.errors import BuildError, InfraError, UsageError
from mochaos.images.recipe import Entry, Steps, fingerprint


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path / "cache"))


def test_a_key_changes_with_any_input_and_not_with_the_order_of_keys() -> None:
    base = {"version": "1.2.3", "go": "go1.26.8", "packages": ["curl"]}
    assert fingerprint(base) == fingerprint(dict(reversed(base.items())))
    for changed in ({"version": "1.2.4"}, {"go": "go1.26.9"}, {"packages": ["curl", "git"]}):
        assert fingerprint({**base, **changed}) != fingerprint(base)


def test_an_entry_counts_once_its_build_completed_and_is_built_once() -> None:
    entry = Entry("thing", "1.0", "abc")
    assert not entry.complete()
    with entry.building() as needed:
        assert needed
        (entry.directory / "out").write_text("built")
    assert entry.complete()
    with entry.building() as needed:
        assert not needed
    assert (entry.directory / "out").read_text() == "built"


def test_a_failed_build_leaves_nothing_that_counts() -> None:
    entry = Entry("thing", "1.0", "abc")
    with pytest.raises(RuntimeError), entry.building():
        (entry.directory / "half").write_text("x")
        raise RuntimeError("step failed")
    assert not entry.complete()
    assert not entry.directory.exists()


def _steps(lines: list[str], **kw) -> Steps:
    return Steps("building img:1", 2, progress=lines.append, log_path=Path("/x/build.log"), **kw)


def test_steps_are_numbered_timed_and_kept_alive() -> None:
    lines: list[str] = []
    steps = _steps(lines, heartbeat=0.05)
    with steps.step("first"):
        import time

        time.sleep(0.2)
    with steps.step("second"):
        pass
    assert lines[0] == "building img:1 [1/2] first …"
    assert any(line.startswith("building img:1 [1/2] first: ") for line in lines[1:-3])
    assert lines[-3].startswith("building img:1 [1/2] first done in ")
    assert lines[-1].startswith("building img:1 [2/2] second done in ")
    assert set(steps.times) == {"first", "second"}


def test_a_failing_step_is_one_line_naming_the_image_the_step_and_its_log() -> None:
    steps = _steps([])
    with pytest.raises(BuildError) as info, steps.step("mo-service"):
        raise InfraError("go build ./cmd/mo-service failed (exit 1): undefined: x")
    assert str(info.value) == (
        "building img:1: mo-service: go build ./cmd/mo-service failed (exit 1): undefined: x: "
        "see the build log /x/build.log"
    )
    with (
        pytest.raises(BuildError, match=r"see the build log /y\.log"),
        steps.step("base", log_path=Path("/y.log")),
    ):
        raise OSError("disk full")


def test_a_refusal_inside_a_step_stays_a_usage_error() -> None:
    with pytest.raises(UsageError, match="needs root"), _steps([]).step("base"):
        raise UsageError("debootstrap needs root")
