"""Image references: repository and tag, digests refused, the version a reference names."""

from __future__ import annotations

import pytest

from mochaos.errors import UsageError
from mochaos.tooling.image_ref import image_version, split_ref

REF = "matrixorigin/matrixone-operator:nightly-abc1234-20260601"


@pytest.mark.parametrize(
    ("ref", "parts"),
    [
        (REF, ("matrixorigin/matrixone-operator", "nightly-abc1234-20260601")),
        ("localhost:5000/mo/op:dev", ("localhost:5000/mo/op", "dev")),
        ("localhost:5000/mo/op", ("localhost:5000/mo/op", "latest")),
        ("busybox", ("busybox", "latest")),
    ],
    ids=["hub", "registry-with-port", "registry-with-port-no-tag", "bare-name"],
)
def test_split_ref(ref: str, parts: tuple[str, str]) -> None:
    assert split_ref(ref) == parts


def test_split_ref_refuses_digests() -> None:
    with pytest.raises(UsageError, match="uses a digest"):
        split_ref("repo/op@sha256:" + "0" * 64)


@pytest.mark.parametrize(
    ("image", "version"),
    [
        (REF, "nightly-abc1234-20260601"),
        ("reg:5000/op", "latest"),
        ("op@sha256:0123456789abcdef0123", "0123456789ab"),
        ("op:v1@sha256:0123", "v1"),
    ],
)
def test_image_version(image: str, version: str) -> None:
    assert image_version(image) == version
