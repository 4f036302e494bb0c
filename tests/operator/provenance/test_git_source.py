"""source:<git URL>[@<rev>]: mirrored once, fetched when needed, failures in one line.

Every remote here is a repository made by the test and named by a file:// URL, or a
loopback port nothing listens on (an unreachable remote): no network.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from mochaos.errors import InfraError, UsageError
from mochaos.operator.provenance import checkout as co
from mochaos.operator.provenance import git_source as gs
from mochaos.operator.targets import source as source_target
from mochaos.report.child_pytest import pytest_command

ROOT = Path(__file__).resolve().parents[3]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


class Origin:
    """A work tree whose commits are pushed to a bare repository, the remote under test."""

    def __init__(self, root: Path) -> None:
        self.tree = root / "work"
        self.bare = root / "origin.git"
        self.tree.mkdir()
        git(self.tree, "init", "-q", "-b", "main")
        git(self.tree, "config", "user.email", "t@example.com")
        git(self.tree, "config", "user.name", "t")
        module = "module github.com/matrixorigin/matrixone-operator\n"
        self.commits = [self.commit("go.mod", module)]
        subprocess.run(["git", "clone", "-q", "--bare", str(self.tree), str(self.bare)], check=True)

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def commit(self, name: str, text: str) -> str:
        (self.tree / name).write_text(text)
        git(self.tree, "add", ".")
        git(self.tree, "commit", "-qm", name)
        return git(self.tree, "rev-parse", "HEAD")

    def push(self, name: str, text: str, ref: str = "refs/heads/main") -> str:
        sha = self.commit(name, text)
        git(self.tree, "push", "-q", str(self.bare), f"HEAD:{ref}")
        return sha


@pytest.fixture
def origin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Origin:
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MOCHAOS_STATE", str(tmp_path / "state"))
    return Origin(tmp_path)


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound once, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("value", "url", "rev"),
    [
        ("https://github.com/o/r.git@2301e3b", "https://github.com/o/r.git", "2301e3b"),
        ("https://github.com/o/r", "https://github.com/o/r", None),
        ("ssh://git@github.com/o/r.git", "ssh://git@github.com/o/r.git", None),
        ("ssh://git@host:22/o/r.git@v1.2", "ssh://git@host:22/o/r.git", "v1.2"),
        ("git@github.com:o/r.git", "git@github.com:o/r.git", None),
        ("git@github.com:o/r.git@refs/pull/592/head", "git@github.com:o/r.git",
         "refs/pull/592/head"),
        ("file:///srv/op.git@main", "file:///srv/op.git", "main"),
        ("file://localhost/srv/op.git", "file://localhost/srv/op.git", None),
    ],
)  # fmt: skip
def test_urls_split_at_the_last_at_after_the_host(value: str, url: str, rev: str | None):
    assert gs.is_url(value)
    assert gs.parse(value) == (url, rev)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ftp://host/r.git", "unsupported URL scheme 'ftp'"),
        ("https://github.com", "no repository path"),
        ("https://github.com/", "no repository path"),
        ("https:///o/r.git", "no host"),
        ("file://server/srv/op.git", "a file URL names a path on this machine"),
        ("https://github.com/o/r.git@", "empty revision"),
    ],
)
def test_malformed_urls_are_the_users(value: str, message: str):
    with pytest.raises(UsageError, match=message) as err:
        gs.parse(value)
    assert "\n" not in str(err.value)


def test_directories_are_not_urls(tmp_path: Path):
    assert not gs.is_url(str(tmp_path))
    assert not gs.is_url(f"{tmp_path}@main")
    assert not gs.is_url("relative/op@2301e3b")


def test_cloned_once_then_a_held_commit_needs_no_network(origin: Origin):
    first = origin.commits[0]
    found = gs.resolve(origin.url, first[:7])
    assert found.commit == first and (found.path / "go.mod").is_file()
    mirror = gs.mirror_dir(origin.url)
    assert git(mirror, "rev-parse", "--is-bare-repository") == "true"
    shutil.rmtree(origin.bare)  # the remote is gone: what the mirror holds still resolves
    assert gs.identify(origin.url, first).commit == first
    assert gs.identify(origin.url, first[:10]).commit == first


def test_a_revision_the_mirror_lacks_is_fetched(origin: Origin):
    gs.identify(origin.url, None)
    later = origin.push("later.txt", "2")
    found = gs.resolve(origin.url, later)
    assert found.commit == later and (found.path / "later.txt").read_text() == "2"


def test_a_pull_request_head_is_fetched(origin: Origin):
    gs.identify(origin.url, None)
    pr = origin.push("pr.txt", "pr", ref="refs/pull/7/head")
    assert gs.identify(origin.url, "refs/pull/7/head").commit == pr
    assert gs.identify(origin.url, "main").commit == origin.commits[0]


def test_a_moved_branch_is_seen_by_the_next_run_and_pinned_within_one(origin: Origin):
    assert gs.identify(origin.url, "main", run_id="r1").commit == origin.commits[0]
    moved = origin.push("moved.txt", "m")
    assert gs.identify(origin.url, "main", run_id="r1").commit == origin.commits[0]
    assert gs.identify(origin.url, "main", run_id="r2").commit == moved
    assert gs.identify(origin.url, None).commit == moved


def test_unknown_revisions_are_the_users(origin: Origin):
    with pytest.raises(UsageError, match="no commit 'nope'"):
        gs.identify(origin.url, "nope")
    with pytest.raises(UsageError, match=r"no commit 'abcdef1'.*full 40-digit"):
        gs.identify(origin.url, "abcdef1")
    with pytest.raises(UsageError, match="couldn't find remote ref refs/pull/99/head") as err:
        gs.identify(origin.url, "refs/pull/99/head")
    assert "\n" not in str(err.value)


def test_a_repository_that_does_not_exist_is_the_users(origin: Origin, tmp_path: Path):
    with pytest.raises(UsageError, match="does not appear to be a git repository") as err:
        gs.identify((tmp_path / "nowhere.git").as_uri(), "main")
    assert "\n" not in str(err.value)
    assert not gs.mirror_dir((tmp_path / "nowhere.git").as_uri()).exists()


def test_an_unreachable_remote_is_infrastructure(origin: Origin, closed_port: int):
    url = f"https://127.0.0.1:{closed_port}/op.git"
    with pytest.raises(InfraError, match=r"cloning .* failed: .*(refused|connect)") as err:
        gs.identify(url, "main")
    assert "\n" not in str(err.value)
    # Offline with a mirror (seeded here): a commit it holds works, a name cannot be refreshed.
    shutil.copytree(origin.bare, gs.mirror_dir(url))
    assert gs.identify(url, origin.commits[0]).commit == origin.commits[0]
    with pytest.raises(InfraError, match=r"fetching main from .* failed") as err:
        gs.identify(url, "main")
    assert "\n" not in str(err.value)


def test_the_url_form_is_the_same_target_as_the_directory_form(origin: Origin):
    sha = origin.commits[0]
    by_url = source_target.from_spec(f"{origin.url}@{sha[:7]}", {"cluster": "local"})
    by_dir = source_target.from_spec(f"{origin.bare}@{sha[:7]}", {"cluster": "local"})
    assert by_url.version == by_dir.version == f"matrixone-operator@{sha[:12]}"
    assert by_url._crd_root == by_dir._crd_root == co.exported(sha).path


def _collect(tmp_path: Path, operator: str) -> subprocess.CompletedProcess[str]:
    cmd = pytest_command(["suites", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "--operator", operator])  # fmt: skip
    env = {"MOCHAOS_CACHE": str(tmp_path / "cache"), "MOCHAOS_STATE": str(tmp_path / "state")}
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**_environ(), **env})  # fmt: skip


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "MOCHAOS_"))}


def test_pytest_stops_before_any_test_with_the_right_status(tmp_path: Path, closed_port: int):
    unreachable = _collect(tmp_path, f"source:https://127.0.0.1:{closed_port}/op.git@main")
    assert unreachable.returncode == 3, unreachable.stdout + unreachable.stderr
    (line,) = [ln for ln in unreachable.stderr.splitlines() if "mo-chaos:" in ln]
    assert "cloning https://127.0.0.1" in line and "Traceback" not in unreachable.stderr
    malformed = _collect(tmp_path, "source:ftp://host/op.git")
    assert malformed.returncode == 4, malformed.stdout + malformed.stderr
    assert "unsupported URL scheme 'ftp'" in malformed.stderr


@pytest.mark.parametrize(
    ("stderr", "users"),
    [
        ("remote: Repository not found.\nfatal: repository 'https://github.com/o/x.git/' not "
         "found", True),
        ("fatal: unable to access 'https://h/o/r.git/': The requested URL returned error: 404",
         True),
        ("git@github.com: Permission denied (publickey).\nfatal: Could not read from remote "
         "repository.", True),
        ("fatal: could not read Username for 'https://github.com': terminal prompts disabled",
         True),
        ("fatal: couldn't find remote ref refs/pull/9/head", True),
        ("fatal: unable to access 'https://github.com/o/r.git/': Could not resolve host: "
         "github.com", False),
        ("ssh: connect to host github.com port 22: Connection timed out\nfatal: Could not read "
         "from remote repository.\n\nPlease make sure you have the correct access rights\nand "
         "the repository exists.", False),
        ("fatal: unable to access 'https://h/r/': SSL certificate problem: self-signed "
         "certificate", False),
        ("error: RPC failed; curl 56 Recv failure: Connection reset by peer\nfatal: early EOF",
         False),
    ],
)  # fmt: skip
def test_git_failures_blame_the_user_only_for_what_the_user_can_fix(stderr: str, users: bool):
    assert gs.blames_user(stderr) is users
