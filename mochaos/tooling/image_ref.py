"""Container image references: ``repository:tag`` split, and the version a reference names."""

from __future__ import annotations

from mochaos.errors import UsageError


def split_ref(ref: str) -> tuple[str, str]:
    """(repository, tag) of an image reference; the tag defaults to ``latest``.

    Digests are refused: kind loads and the operator's chart join repository
    and tag, so a reference must be ``repository:tag``.
    """
    if "@" in ref:
        raise UsageError(
            f"image reference {ref!r} uses a digest",
            hint="name the image by tag (repository:tag); kind and the chart load tags",
        )
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        return ref[:colon], ref[colon + 1 :]
    return ref, "latest"


def image_version(image: str) -> str:
    """The tag of an image reference (or its short digest when it has no tag)."""
    name, _, digest = image.partition("@")
    slash, colon = name.rfind("/"), name.rfind(":")
    if colon > slash:
        return name[colon + 1 :]
    return digest.removeprefix("sha256:")[:12] if digest else "latest"
