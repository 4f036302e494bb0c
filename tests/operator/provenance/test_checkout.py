"""Operator checkouts: work trees keyed by commit and local changes, revisions exported."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mochaos.errors import UsageError
from mochaos.operator.provenance import checkout as co


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MOCHAOS_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "op"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    (root / "go.mod").write_text(
        "module github.com/matrixorigin/matrixone-operator\n\nrequire (\n"
        "\tgithub.com/matrixorigin/matrixone v0.7.1-0.2024 \n)\n"
    )
    git(root, "add", ".")
    git(root, "commit", "-qm", "one")
    return root


def test_source_values_split_at_the_last_at(tmp_path: Path):
    assert co.parse_source(f"{tmp_path}@abc") == (tmp_path, "abc")
    assert co.parse_source(str(tmp_path)) == (tmp_path, None)
    with pytest.raises(UsageError, match="empty revision"):
        co.parse_source(f"{tmp_path}@")


def test_a_clean_work_tree_is_keyed_by_its_commit(repo: Path):
    found = co.identify(repo, None)
    assert found.commit == git(repo, "rev-parse", "HEAD") and found.dirty == ""
    assert found.key == found.commit[:12]
    assert found.matrixone_version() == "v0.7.1-0.2024"


def test_local_changes_change_the_key(repo: Path):
    clean = co.identify(repo, None)
    (repo / "go.mod").write_text((repo / "go.mod").read_text() + "// changed\n")
    dirty = co.identify(repo, None)
    assert dirty.commit == clean.commit and dirty.dirty and dirty.key != clean.key
    assert "local changes" in dirty.describe


def test_a_revision_is_exported_into_the_cache(repo: Path):
    first = git(repo, "rev-parse", "HEAD")
    (repo / "later.txt").write_text("x")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "two")
    found = co.resolve(repo, first[:7])
    assert found.commit == first and (found.path / "go.mod").is_file()
    assert not (found.path / "later.txt").exists()


def test_an_unknown_revision_is_one_line(repo: Path):
    with pytest.raises(UsageError, match="no commit 'nope'"):
        co.identify(repo, "nope")


def test_a_folder_without_go_mod_is_refused(tmp_path: Path):
    with pytest.raises(UsageError, match=r"no go\.mod"):
        co.identify(tmp_path, None)
