"""``source:<git URL>[@<rev>]``: a matrixone-operator repository by URL, mirrored in the cache.

The URL (https, http, ssh, git, file, or scp-like ``user@host:path``) is cloned once as a
bare mirror under ``<cache>/operator/git/``. A commit id the mirror holds needs no network;
a name (branch, tag, ``refs/pull/<n>/head``, none: the default branch) is fetched afresh once
per run, since names move, and pinned for the run's other processes (xdist workers); the
commit is then exported as for ``source:<dir>@<rev>`` (:mod:`mochaos.operator.provenance.checkout`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from filelock import FileLock

from mochaos.errors import InfraError, UsageError
from mochaos.operator.provenance.checkout import Checkout, export_commit, exported
from mochaos.paths import cache_dir, state_dir
from mochaos.progress import announce

SCHEMES = ("https", "http", "ssh", "git", "file")
GIT_TIMEOUT = 900.0
"""Seconds a clone or fetch may take before it counts as a failed fetch."""
PIN_TTL = 2 * 86400.0
"""Seconds a run's pins are kept (older pin files are removed when a new one is written)."""

_SCP = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9._-]+:(?!//)")
"""scp-like syntax: ``git@github.com:matrixorigin/matrixone-operator.git``."""
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_HEX = re.compile(r"^[0-9a-f]{4,40}$")
_USERS = (
    "does not appear to be a git repository", "repository not found", "not found",
    "error: 404", "authentication failed", "permission denied", "couldn't find remote ref",
    "invalid refspec", "could not read username",
)  # fmt: skip
"""A wrong URL, revision or missing credentials: the user's to fix. Any other failure (no
network, a refused or timed-out connection, a broken remote) is the infrastructure's."""


def is_url(value: str) -> bool:
    """True when a ``source:`` value names a repository by URL rather than a directory."""
    return "://" in value or _SCP.match(value) is not None


def parse(value: str) -> tuple[str, str | None]:
    """``<url>[@<rev>]`` → (url, revision or None); UsageError for a malformed URL.

    The revision follows the last ``@`` after the host part, so ``ssh://git@host/repo``
    and ``git@host:org/repo.git`` keep their user.
    """
    if "://" in value:
        scheme, _, rest = value.partition("://")
        slash = rest.find("/")
        if scheme not in SCHEMES:
            raise UsageError(
                f"source:{value}: unsupported URL scheme {scheme!r}",
                hint=f"use one of {', '.join(SCHEMES)}, or a directory",
            )
        if slash < 0:
            raise UsageError(
                f"source:{value}: the URL has no repository path",
                hint="e.g. source:https://github.com/<org>/<repo>[@<rev>]",
            )
        host, tail = rest[:slash], rest[slash:]
        head = f"{scheme}://{host}"
        if scheme == "file" and host not in ("", "localhost"):
            raise UsageError(
                f"source:{value}: a file URL names a path on this machine",
                hint="use file:///<absolute path of the repository>",
            )
        if scheme != "file" and not host.rpartition("@")[2]:
            raise UsageError(
                f"source:{value}: the URL has no host",
                hint=f"use {scheme}://<host>/<repository path>",
            )
    else:
        m = _SCP.match(value)
        assert m is not None, value
        head, tail = value[: m.end()], value[m.end() :]
    path, sep, rev = tail.rpartition("@") if "@" in tail else (tail, "", "")
    if sep and not rev:
        raise UsageError(f"source:{value}: empty revision after @", hint="use source:<url>@<rev>")
    if path.strip("/") == "":
        raise UsageError(
            f"source:{value}: the URL has no repository path",
            hint="name the repository, e.g. .../matrixone-operator.git",
        )
    return head + path, (rev or None)


def mirror_dir(url: str) -> Path:
    """Where the bare mirror of ``url`` lives in the cache."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", url.rstrip("/").rsplit("/", 1)[-1].rsplit(":")[-1])
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    return cache_dir() / "operator" / "git" / f"{name.removesuffix('.git')}-{digest}.git"


def identify(url: str, rev: str | None, *, run_id: str | None = None) -> Checkout:
    """The commit ``rev`` names (default: the remote's default branch), fetched if needed.

    A ``run_id`` pins what a name resolved to, so every process of one run builds the same
    commit. UsageError for an unknown revision or a repository that does not exist,
    InfraError when the remote cannot be reached.
    """
    if shutil.which("git") is None:
        raise UsageError("source:<git URL> needs git on PATH", hint="install git")
    want = rev or "HEAD"
    mirror, cloned = _ensure_mirror(url)
    if _HEX.match(want) and (local := _commit(mirror, want)) is not None:
        return exported(local)
    pinned = _read_pin(run_id, url, want)
    if pinned is not None and _commit(mirror, pinned) == pinned:
        return exported(pinned)
    if not cloned or _commit(mirror, want) is None:
        _fetch(mirror, url, want)
    commit = _commit(mirror, want)
    if commit is None:
        hint = (
            "give the full 40-digit commit id, or a branch, tag or refs/pull/<n>/head"
            if _HEX.match(want)
            else "give a branch, tag, commit or refs/pull/<n>/head"
        )
        raise UsageError(f"{url}: no commit {want!r}", hint=hint)
    _write_pin(run_id, url, want, commit)
    return exported(commit)


def resolve(url: str, rev: str | None, *, run_id: str | None = None) -> Checkout:
    """The work tree to build: the revision's commit exported into the cache."""
    found = identify(url, rev, run_id=run_id)
    return export_commit(mirror_dir(url), found.commit)


# -- git ----------------------------------------------------------------------------------


def _run_git(args: list[str], *, what: str, url: str) -> None:
    """A network git command; its failure is one line, the user's or the infrastructure's."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    try:
        proc = subprocess.run(
            ["git", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=GIT_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as err:
        raise InfraError(
            f"{what} {url} took over {GIT_TIMEOUT:.0f}s",
            hint="check the network, or use a local mirror (source:<dir>@<rev>)",
        ) from err
    if proc.returncode == 0:
        return
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    why = next(
        (ln for ln in lines if ln.lower().startswith(("fatal:", "error:"))),
        lines[-1] if lines else f"git exit {proc.returncode}",
    )
    if blames_user(proc.stderr):
        raise UsageError(
            f"{what} {url} failed: {why}",
            hint="check the URL, the revision and your access to the repository",
        )
    raise InfraError(
        f"{what} {url} failed: {why}",
        hint="the remote could not be reached; check the network or credentials "
        "helper, or use a local mirror (source:<dir>@<rev>)",
    )


def blames_user(stderr: str) -> bool:
    """Whether git's error output says the user's input is wrong (else: infrastructure)."""
    low = stderr.lower()
    return any(p in low for p in _USERS)


def _ensure_mirror(url: str) -> tuple[Path, bool]:
    """The bare mirror of ``url``, cloned now when absent; (path, whether just cloned)."""
    mirror = mirror_dir(url)
    mirror.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(mirror) + ".lock", timeout=GIT_TIMEOUT + 60):
        if (mirror / "HEAD").is_file():
            return mirror, False
        announce(f"cloning {url} into {mirror}")
        with tempfile.TemporaryDirectory(dir=mirror.parent) as tmp:
            staged = Path(tmp) / "mirror.git"
            _run_git(["clone", "--bare", "--quiet", url, str(staged)], what="cloning", url=url)
            staged.rename(mirror)
        return mirror, True


def _fetch(mirror: Path, url: str, want: str) -> None:
    """Bring the mirror's branches and tags up to date, and ``want`` when it is a ref or id."""
    refspecs = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"]
    if want.startswith("refs/"):
        refspecs.append(f"+{want}:{want}")
    elif _COMMIT.match(want):
        refspecs.append(want)
    announce(f"fetching {want} from {url}")
    with FileLock(str(mirror) + ".lock", timeout=GIT_TIMEOUT + 60):
        _run_git(
            ["--git-dir", str(mirror), "fetch", "--quiet", url, *refspecs],
            what=f"fetching {want} from",
            url=url,
        )


def _commit(mirror: Path, rev: str) -> str | None:
    """The commit ``rev`` names in the mirror (None when it names none there)."""
    proc = subprocess.run(
        ["git", "--git-dir", str(mirror), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True, text=True,
    )  # fmt: skip
    return proc.stdout.strip() if proc.returncode == 0 else None


# -- pins: what a name resolved to, for the rest of the run ----------------------------------


def _pin_file(run_id: str) -> Path:
    return state_dir() / "source-pins" / f"{run_id}.json"


def _read_pin(run_id: str | None, url: str, want: str) -> str | None:
    if not run_id:
        return None
    try:
        pins = json.loads(_pin_file(run_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return pins.get(f"{url}@{want}")


def _write_pin(run_id: str | None, url: str, want: str, commit: str) -> None:
    if not run_id:
        return
    path = _pin_file(run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path.parent / ".lock"), timeout=60):
        now = time.time()
        for old in path.parent.glob("*.json"):
            if old != path and now - old.stat().st_mtime > PIN_TTL:
                old.unlink(missing_ok=True)
        try:
            pins = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pins = {}
        pins.setdefault(f"{url}@{want}", commit)
        path.write_text(json.dumps(pins, indent=2) + "\n", encoding="utf-8")
