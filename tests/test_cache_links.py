"""Outputs linked into DVC's cache (issue 52): spanft never writes through them, and its fix, followed to the
letter, loses nothing: every cache object still hashes to its name and the committed version checks out.

Each test makes a real DVC project (`dvc add` with the cache type under test), runs the real command line by
hand over the tracked output, follows the fix the error line gives (the command between its last backticks,
run in a shell), runs the command again and checks the cache."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("dvc") is None, reason="needs the dvc command")

CORPUS = "the cat sat on the mat\nthe cat sat\n"


def run(argv: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert not check or done.returncode == 0, done.stderr
    return done


def spanft(cwd: Path, out: str, corpus: str = "c.txt") -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "spanft.cli", "count-ngrams", corpus, "--min-count", "1", "--out", out], cwd,
               check=False)


def project(root: Path, cache_type: str) -> str:
    """A DVC project whose ``counts.tsv`` is tracked and checked out as ``cache_type``; its committed md5."""
    root.mkdir()
    run(["dvc", "init", "--no-scm", "-q"], root)
    run(["dvc", "config", "cache.type", cache_type], root)
    (root / "c.txt").write_text(CORPUS, encoding="utf-8")
    assert spanft(root, "counts.tsv").returncode == 0
    run(["dvc", "add", "-q", "counts.tsv"], root)
    committed = hashlib.md5((root / "counts.tsv").read_bytes()).hexdigest()
    (root / "c.txt").write_text(CORPUS + "a dog ran\n", encoding="utf-8")  # the hand-run makes other counts
    return committed


def cache_objects_intact(root: Path) -> list[Path]:
    """Every file object of the cache, checked against its name (md5 of its bytes)."""
    objects = [p for p in (root / ".dvc" / "cache" / "files" / "md5").glob("*/*") if not p.name.endswith(".dir")]
    for path in objects:
        assert hashlib.md5(path.read_bytes()).hexdigest() == path.parent.name + path.name, f"{path} was changed"
    return objects


def follow(fix_line: str, cwd: Path) -> None:
    """Run the fix the line gives, as a user pastes it."""
    fix = re.findall(r"`([^`]+)`", fix_line)[-1]
    assert "chmod" not in fix, fix_line
    subprocess.run(["bash", "-c", fix], cwd=cwd, check=True, capture_output=True, timeout=300)


def assert_committed_version_kept(root: Path, committed: str) -> None:
    cache_objects_intact(root)
    assert (root / ".dvc" / "cache" / "files" / "md5" / committed[:2] / committed[2:]).is_file()
    status = run(["dvc", "status"], root).stdout
    assert "not in cache" not in status and "modified" in status  # the hand-run's output, the old one cached
    run(["dvc", "checkout", "-q", "--force", "counts.tsv.dvc"], root)
    assert hashlib.md5((root / "counts.tsv").read_bytes()).hexdigest() == committed


@pytest.mark.parametrize("cache_type, kind", [("symlink", "a symbolic link into DVC's cache"),
                                              ("hardlink", "a hard link into DVC's cache")])
def test_a_linked_output_is_refused_with_dvc_unprotect_and_following_it_loses_nothing(tmp_path, cache_type, kind):
    root = tmp_path / "proj"
    committed = project(root, cache_type)
    refused = spanft(root, "counts.tsv")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert kind in refused.stderr and "`dvc unprotect counts.tsv`" in refused.stderr, refused.stderr
    assert "chmod" not in refused.stderr
    cache_objects_intact(root)
    follow(refused.stderr, root)
    assert spanft(root, "counts.tsv").returncode == 0
    assert "a dog ran" in (root / "counts.tsv").read_text(encoding="utf-8")
    assert not (root / "counts.tsv").is_symlink()
    assert_committed_version_kept(root, committed)


def test_a_protected_copy_in_a_dvc_project_is_unprotected_not_chmodded(tmp_path):
    """A reflink cannot be told from a copy: a read-only output in a DVC project gets `dvc unprotect` too."""
    root = tmp_path / "proj"
    committed = project(root, "copy")
    (root / "counts.tsv").chmod(0o444)
    refused = spanft(root, "counts.tsv")
    assert refused.returncode == 2 and "`dvc unprotect counts.tsv`" in refused.stderr, refused.stderr
    follow(refused.stderr, root)
    assert spanft(root, "counts.tsv").returncode == 0
    assert_committed_version_kept(root, committed)


def test_a_writable_cache_object_is_never_written_through(tmp_path):
    """Someone made the cache object writable (the old advice, `chmod u+w` through the link): spanft replaces
    the link itself, and the cache keeps the committed version."""
    root = tmp_path / "proj"
    committed = project(root, "symlink")
    os.chmod(os.path.realpath(root / "counts.tsv"), 0o644)
    done = spanft(root, "counts.tsv")
    assert done.returncode == 0, done.stderr
    assert not (root / "counts.tsv").is_symlink() and "a dog ran" in (root / "counts.tsv").read_text(encoding="utf-8")
    assert_committed_version_kept(root, committed)


def test_the_fix_works_from_outside_the_project(tmp_path):
    root = tmp_path / "my proj"
    committed = project(root, "symlink")
    refused = spanft(tmp_path, "my proj/counts.tsv", corpus="my proj/c.txt")
    assert refused.returncode == 2 and "dvc unprotect counts.tsv" in refused.stderr, refused.stderr
    follow(refused.stderr, tmp_path)
    assert spanft(tmp_path, "my proj/counts.tsv", corpus="my proj/c.txt").returncode == 0
    assert_committed_version_kept(root, committed)


def test_a_read_only_file_outside_dvc_keeps_chmod_and_following_it_writes_only_that_file(tmp_path):
    (tmp_path / "c.txt").write_text(CORPUS, encoding="utf-8")
    (tmp_path / "mine.txt").write_text("mine\n", encoding="utf-8")
    (tmp_path / "counts.tsv").write_text("old\n", encoding="utf-8")
    (tmp_path / "counts.tsv").chmod(0o444)
    refused = spanft(tmp_path, "counts.tsv")
    assert refused.returncode == 2 and "`chmod u+w counts.tsv`" in refused.stderr, refused.stderr
    fix = re.findall(r"`([^`]+)`", refused.stderr)[-1]
    subprocess.run(["bash", "-c", fix], cwd=tmp_path, check=True)
    assert spanft(tmp_path, "counts.tsv").returncode == 0
    assert (tmp_path / "mine.txt").read_text(encoding="utf-8") == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt", "counts.tsv", "mine.txt"]


def test_links_into_the_cache_are_told_from_links_of_yours_without_dvc(tmp_path):
    """The configured cache (`cache.dir`, relative to .dvc/), its objects linked and hard-linked, against a
    link to a file of yours and a second name of yours: only the first two are the cache's."""
    from spanft.stage.dvc_cache import cache_link

    root = tmp_path / "proj"
    (root / ".dvc").mkdir(parents=True)
    (root / ".dvc" / "config").write_text("[cache]\n    dir = ../../shared-cache\n", encoding="utf-8")
    data = b"committed\n"
    digest = hashlib.md5(data).hexdigest()
    obj = tmp_path / "shared-cache" / "files" / "md5" / digest[:2] / digest[2:]
    obj.parent.mkdir(parents=True)
    obj.write_bytes(data)
    (root / "linked.tsv").symlink_to(obj)
    os.link(obj, root / "hard.tsv")
    (root / "mine.tsv").write_bytes(data)
    (root / "link-to-mine.tsv").symlink_to(root / "mine.tsv")
    os.link(root / "mine.tsv", root / "second-name.tsv")
    assert cache_link(root / "linked.tsv") == "a symbolic link"
    assert cache_link(root / "hard.tsv") == "a hard link"
    assert [cache_link(root / name) for name in ("mine.tsv", "link-to-mine.tsv", "second-name.tsv")] == [None] * 3
