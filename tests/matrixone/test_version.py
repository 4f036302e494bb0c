"""The semantic version the operator's webhooks need: read like blang/semver's ParseTolerant."""

from __future__ import annotations

import pytest

from mochaos import exits
from mochaos.errors import UsageError
from mochaos.matrixone.version import mo_semantic_version, semantic_version


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("1.2.3", "1.2.3"),
        ("v1.2.3", "1.2.3"),
        ("1.2", "1.2.0"),
        ("v2", "2.0.0"),
        ("01.02.03", "1.2.3"),
        (" 1.2.3 ", "1.2.3"),
        ("2.1.0-rc1", "2.1.0-rc1"),
        ("2.1.0-rc.1+build.5", "2.1.0-rc.1+build.5"),
        ("nightly-4a4c2b8c", None),
        ("latest", None),
        ("1.2-rc1", None),  # ParseTolerant: a short version cannot carry a pre-release
        ("1.2.3.4", None),
    ],
)
def test_semantic_version(text: str, version: str | None) -> None:
    assert semantic_version(text) == version


def test_a_semver_tag_is_its_own_version() -> None:
    assert mo_semantic_version("matrixorigin/matrixone:1.2.3") == "1.2.3"
    assert mo_semantic_version("localhost:5000/mo:v2.1") == "2.1.0"


def test_a_nightly_tag_needs_the_version_named() -> None:
    with pytest.raises(UsageError) as info:
        mo_semantic_version("matrixorigin/matrixone:nightly-4a4c2b8c")
    assert str(info.value) == (
        "MatrixOne image tag 'nightly-4a4c2b8c' is not a semantic version and the operator's "
        "webhook rejects MatrixOne objects without one: pass --mochaos-mo-version=<x.y.z>, the "
        "MatrixOne version the image was built from"
    )
    assert info.value.exit_code == exits.USAGE
    assert mo_semantic_version("matrixorigin/matrixone:nightly-4a4c2b8c", "2.1.0") == "2.1.0"


def test_the_named_version_wins_and_must_be_one() -> None:
    assert mo_semantic_version("matrixorigin/matrixone:1.2.3", "v1.2.4") == "1.2.4"
    with pytest.raises(UsageError, match="--mochaos-mo-version 'two' is not a semantic version"):
        mo_semantic_version("matrixorigin/matrixone:1.2.3", "two")
