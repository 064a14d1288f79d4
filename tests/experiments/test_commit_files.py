"""`commit_files`: a finished cell is committed alone; a busy index is waited for, a failure is not silent."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

from experiments.table import record


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@example.com")
    _git(tmp_path, "config", "user.name", "t")
    (tmp_path / "other.txt").write_text("staged elsewhere\n")
    monkeypatch.setattr(record, "ROOT", tmp_path)
    return tmp_path


def test_only_the_named_files_are_committed_and_nothing_new_passes(repo: Path) -> None:
    cell = repo / "cell.json"
    cell.write_text("{}\n")
    record.commit_files([cell], "a cell")
    assert _git(repo, "log", "--format=%s") == "a cell\n"
    assert _git(repo, "show", "--name-only", "--format=") == "cell.json\n"
    record.commit_files([cell], "the same cell again")  # nothing new: no commit, no error
    assert _git(repo, "log", "--format=%s") == "a cell\n"
    tracked = repo / "table.md"  # another tracked file modified (the table rewritten): git words it otherwise
    tracked.write_text("a\n")
    record.commit_files([tracked], "a table")
    tracked.write_text("b\n")
    record.commit_files([cell], "the same cell, the table modified")  # the core table stopped here
    assert _git(repo, "log", "--format=%s") == "a table\na cell\n"


def test_no_file_commits_nothing_not_the_index(repo: Path) -> None:
    """`git commit --` with no path would commit whatever else is staged: no file named, no commit."""
    _git(repo, "add", "other.txt")
    record.commit_files([], "nothing")
    assert _git(repo, "status", "--porcelain") == "A  other.txt\n"
    assert subprocess.run(["git", "log"], cwd=repo, capture_output=True).returncode != 0  # no commit at all


def test_a_busy_index_is_waited_for(repo: Path) -> None:
    cell, lock = repo / "cell.json", repo / ".git" / "index.lock"
    cell.write_text("{}\n")
    lock.write_text("")
    threading.Timer(1.5, lock.unlink).start()
    record.commit_files([cell], "after the lock")
    assert _git(repo, "log", "--format=%s") == "after the lock\n"


def test_a_lock_that_stays_is_an_error(repo: Path) -> None:
    cell = repo / "cell.json"
    cell.write_text("{}\n")
    (repo / ".git" / "index.lock").write_text("")
    with pytest.raises(RuntimeError, match="git add failed: .*index.lock"):
        record.commit_files([cell], "never", tries=2)
