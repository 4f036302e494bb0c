"""A matrixone-operator checkout the user points mo-chaos at (``source:<dir>[@<rev>]``).

The directory may be a work tree (used as it is, keyed by its commit and any local
changes) or a git directory (bare mirror or ``.git``); ``@<rev>`` exports that
revision into mo-chaos's cache first. Nothing from the checkout is kept in the
repository: mo-chaos reads it, builds from it and installs its CRDs.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from mochaos.errors import InfraError, UsageError
from mochaos.paths import cache_dir
from mochaos.progress import announce
from mochaos.tooling.gomod import module_version

OPERATOR_MODULE = "github.com/matrixorigin/matrixone-operator"
MATRIXONE_MODULE = "github.com/matrixorigin/matrixone"


@dataclass(frozen=True)
class Checkout:
    """A work tree of the operator, ready to build and read."""

    path: Path
    commit: str
    """The commit it was made from (40 hex digits), or ``unknown`` outside git."""
    dirty: str
    """A short digest of local changes ('' for a clean tree)."""

    @property
    def key(self) -> str:
        """Identifies what a build from this tree produces."""
        short = self.commit[:12]
        return f"{short}-{self.dirty}" if self.dirty else short

    @property
    def describe(self) -> str:
        """For messages and reports: ``2301e3b54137`` or ``2301e3b54137+local changes``."""
        return f"{self.commit[:12]}+local changes" if self.dirty else self.commit[:12]

    def matrixone_version(self) -> str | None:
        """The ``github.com/matrixorigin/matrixone`` version its go.mod requires."""
        return module_version(self.path / "go.mod", MATRIXONE_MODULE)


def _git(cwd: Path, *args: str, git_dir: bool = False) -> str:
    cmd = ["git", f"--git-dir={cwd}"] if git_dir else ["git", "-C", str(cwd)]
    proc = subprocess.run([*cmd, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, args, proc.stdout, proc.stderr)
    return proc.stdout.strip()


def parse_source(value: str) -> tuple[Path, str | None]:
    """``<dir>[@<rev>]`` → (directory, revision or None)."""
    path, sep, rev = value.rpartition("@") if "@" in value else (value, "", "")
    if sep and not rev:
        raise UsageError(f"source:{value}: empty revision after @", hint="use source:<dir>@<rev>")
    return Path(path).expanduser(), (rev or None)


def check_source(path: Path, rev: str | None) -> None:
    """UsageError unless ``path`` can be a checkout (cheap: no git calls but one)."""
    if not path.is_dir():
        raise UsageError(
            f"operator checkout {path} is not a directory",
            hint="point source: at a matrixone-operator work tree or git directory",
        )
    if rev is None and not (path / "go.mod").is_file():
        raise UsageError(
            f"{path} has no go.mod: not a matrixone-operator work tree",
            hint="point at the checkout's root, or give a git directory and @<rev>",
        )
    if rev is not None and shutil.which("git") is None:
        raise UsageError("source:…@<rev> needs git on PATH", hint="install git")


def identify(path: Path, rev: str | None) -> Checkout:
    """What ``resolve`` will give, without exporting anything (cheap: git rev-parse)."""
    check_source(path, rev)
    if rev is None:
        return _work_tree(path)
    return exported(_commit(_git_dir(path), rev, path))


def resolve(path: Path, rev: str | None) -> Checkout:
    """The work tree to build: ``path`` itself, or ``rev`` exported into the cache."""
    found = identify(path, rev)
    return found if rev is None else export_commit(_git_dir(path), found.commit)


def exported(commit: str) -> Checkout:
    """The cache's work tree of ``commit`` (40 hex digits), as :func:`export_commit` makes it."""
    return Checkout(cache_dir() / "operator" / "src" / commit, commit, "")


def export_commit(git_dir: Path, commit: str) -> Checkout:
    """``commit`` of ``git_dir`` exported into the cache once (shared by xdist workers)."""
    found = exported(commit)
    with FileLock(str(found.path) + ".lock", timeout=600):
        if not (found.path / ".complete").is_file():
            _export(git_dir, commit, found.path)
    return found


def _commit(git_dir: Path, rev: str, path: Path) -> str:
    try:
        return _git(git_dir, "rev-parse", "--verify", f"{rev}^{{commit}}", git_dir=True)
    except subprocess.CalledProcessError as err:
        last = (err.stderr.strip().splitlines() or ["?"])[-1]
        raise UsageError(
            f"{path}: no commit {rev!r} ({last})",
            hint="give a branch, tag, commit or refs/pull/<n>/head of that repository",
        ) from err


def _git_dir(path: Path) -> Path:
    for candidate in (path / ".git", path):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    raise UsageError(
        f"{path} is not a git repository", hint="@<rev> needs a git work tree or git directory"
    )


def _export(git_dir: Path, commit: str, tree: Path) -> None:
    """``git archive <commit>`` into ``tree`` (atomically: a half export is never used)."""
    announce(f"exporting matrixone-operator {commit[:12]} into {tree}")
    tree.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tree.parent) as tmp:
        archive = Path(tmp) / "src.tar"
        with archive.open("wb") as out:
            proc = subprocess.run(
                ["git", f"--git-dir={git_dir}", "archive", commit], stdout=out,
                stderr=subprocess.PIPE, text=False,
            )  # fmt: skip
        if proc.returncode != 0:
            raise InfraError(
                f"git archive {commit[:12]} failed: {proc.stderr.decode(errors='replace')[:200]}",
                hint=f"check {git_dir}",
            )
        staged = Path(tmp) / "tree"
        with tarfile.open(archive) as tar:
            tar.extractall(staged, filter="data")
        (staged / ".complete").write_text(commit + "\n")
        shutil.rmtree(tree, ignore_errors=True)
        staged.rename(tree)


def _work_tree(path: Path) -> Checkout:
    path = path.resolve()
    try:
        commit = _git(path, "rev-parse", "HEAD")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return Checkout(path, "unknown", _tree_digest(path))
    status = _git(path, "status", "--porcelain", "--untracked-files=no")
    if not status:
        return Checkout(path, commit, "")
    diff = subprocess.run(["git", "-C", str(path), "diff", "HEAD"], capture_output=True).stdout
    return Checkout(path, commit, hashlib.sha256(diff).hexdigest()[:8])


def _tree_digest(path: Path) -> str:
    """A digest of every Go source and module file, for a checkout outside git."""
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        if f.is_file() and (f.suffix == ".go" or f.name in ("go.mod", "go.sum")):
            h.update(str(f.relative_to(path)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:8]
