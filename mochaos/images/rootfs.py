"""Debian root file systems (debootstrap) and the files a program in one needs.

``debootstrap --variant=minbase`` from a Debian mirror (``MOCHAOS_DEBIAN_MIRROR``,
default deb.debian.org), with its downloaded packages kept in mo-chaos's cache so
a second build downloads nothing. :func:`closure` lists a program's shared
libraries as the root file system's own ``ldd`` resolves them, to copy a few
tools (iptables, conntrack) into an otherwise static image.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from mochaos.errors import BuildError
from mochaos.paths import cache_dir

MIRROR_ENV = "MOCHAOS_DEBIAN_MIRROR"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEBOOTSTRAP_TIMEOUT = 1800.0


def mirror() -> str:
    """The Debian mirror debootstrap downloads from."""
    return os.environ.get(MIRROR_ENV) or DEFAULT_MIRROR


def debootstrap_command(suite: str, packages: Sequence[str], dest: Path, debs: Path) -> list[str]:
    """The debootstrap command line for a minbase ``suite`` with ``packages``."""
    tool = shutil.which("debootstrap") or "debootstrap"
    return [
        tool, "--variant=minbase", f"--include={','.join(packages)}",
        f"--cache-dir={debs}", suite, str(dest), mirror(),
    ]  # fmt: skip


def _failure(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(("E:", "W: Failure"))]
    return (errors or lines or ["no output"])[-1][:200]


def debootstrap(suite: str, packages: Sequence[str], dest: Path, *, log: Path) -> Path:
    """A fresh minbase root file system of ``suite`` with ``packages`` in ``dest``."""
    if shutil.which("debootstrap") is None:
        raise BuildError(
            "debootstrap not found", hint="install it (Debian: apt-get install debootstrap)"
        )
    if os.geteuid() != 0:
        raise BuildError(
            "building a Debian root file system needs root (debootstrap)",
            hint="run the image build as root once; the image is cached afterwards",
        )
    if dest.exists():
        shutil.rmtree(dest)
    debs = cache_dir() / "debs" / suite
    debs.mkdir(parents=True, exist_ok=True)
    argv = debootstrap_command(suite, packages, dest, debs)
    with log.open("a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(argv)}\n")
        fh.flush()
        try:
            rc = subprocess.run(
                argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                timeout=DEBOOTSTRAP_TIMEOUT,
            ).returncode  # fmt: skip
        except subprocess.TimeoutExpired as err:
            raise BuildError(f"debootstrap {suite} timed out", hint=f"see {log}") from err
    if rc != 0:
        raise BuildError(f"debootstrap {suite} failed: {_failure(log)}", hint=f"see {log}")
    return dest


_LDD_PATH = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def closure(root: Path, programs: Iterable[str]) -> list[str]:
    """``programs`` (absolute paths inside ``root``) and the shared libraries they load,
    as ``ldd`` inside ``root`` resolves them (chroot: the root's own loader and libraries)."""
    found: dict[str, None] = {}
    for program in programs:
        found[program] = None
        result = subprocess.run(
            ["chroot", str(root), "ldd", program], capture_output=True, text=True
        )
        if result.returncode != 0 and "not a dynamic executable" not in result.stdout:
            raise BuildError(f"ldd {program} in {root} failed: {result.stderr.strip()[:200]}")
        for line in result.stdout.splitlines():
            m = _LDD_PATH.search(line)
            if m:
                found[m.group(1)] = None
    return list(found)


def copy_paths(root: Path, paths: Iterable[str], stage: Path) -> None:
    """Copy ``paths`` of ``root`` into ``stage`` at the same places, following each symlink
    chain so that both the links and their targets arrive."""
    for path in paths:
        current = path
        for _ in range(16):
            src = root / current.lstrip("/")
            dst = stage / current.lstrip("/")
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_symlink():
                target = os.readlink(src)
                if not dst.is_symlink():
                    dst.symlink_to(target)
                current = os.path.normpath(os.path.join(os.path.dirname(current), target))
                continue
            if src.is_dir():
                shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
            elif src.exists():
                shutil.copy2(src, dst)
            break
