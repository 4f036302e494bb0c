"""The MatrixOne semantic version the operator's webhooks require, from a tag or an option.

The operator validates every PodSet (LogSet, DNSet, CNSet): ``semanticVersion``
must be set or the image tag must parse as a semantic version
(matrixone-operator 2301e3b, pkg/webhook/common.go:92 ``validatePodSet``, via
``PodSet.GetSemVer`` in api/core/v1alpha1/common_helpers.go:287, which uses
blang/semver's ``ParseTolerant``). The version also gates MatrixOne features
in the operator (api/core/v1alpha1/semver.go), so it must be the version the
image was built from: a nightly tag needs it named explicitly.
"""

from __future__ import annotations

import re

from mochaos.errors import UsageError
from mochaos.tooling.image_ref import split_ref

_IDENT = r"[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*"
_TOLERANT = re.compile(
    rf"v?(?P<major>\d+)(?:\.(?P<minor>\d+))?(?:\.(?P<patch>\d+))?"
    rf"(?:-(?P<pre>{_IDENT}))?(?:\+(?P<build>{_IDENT}))?"
)


def semantic_version(text: str) -> str | None:
    """``text`` as blang/semver's ParseTolerant reads it (``v1.2`` -> ``1.2.0``), or None.

    Tolerated like ParseTolerant: surrounding spaces, a leading ``v``, leading
    zeros, a missing minor or patch (only without pre-release or build parts).
    """
    m = _TOLERANT.fullmatch(text.strip())
    if m is None:
        return None
    short = m["minor"] is None or m["patch"] is None
    if short and (m["pre"] or m["build"]):
        return None
    core = ".".join(str(int(part or 0)) for part in (m["major"], m["minor"], m["patch"]))
    pre = f"-{m['pre']}" if m["pre"] else ""
    build = f"+{m['build']}" if m["build"] else ""
    return core + pre + build


def mo_semantic_version(mo_image: str, override: str | None = None) -> str:
    """The semanticVersion our MatrixOne objects carry; UsageError when there is none.

    ``override`` (``--mochaos-mo-version``) wins; otherwise the image tag must be one.
    """
    if override is not None:
        version = semantic_version(override)
        if version is None:
            raise UsageError(
                f"--mochaos-mo-version {override!r} is not a semantic version",
                hint="pass the MatrixOne version the image was built from, "
                "e.g. --mochaos-mo-version=2.1.0",
            )
        return version
    _, tag = split_ref(mo_image)
    version = semantic_version(tag)
    if version is None:
        raise UsageError(
            f"MatrixOne image tag {tag!r} is not a semantic version and the operator's webhook "
            "rejects MatrixOne objects without one",
            hint="pass --mochaos-mo-version=<x.y.z>, the MatrixOne version the image was "
            "built from",
        )
    return version
