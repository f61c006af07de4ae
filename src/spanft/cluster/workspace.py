"""The head repo as the jobs must see it, and each job's own workspace: a clone at the head's commit.

A job runs the head's committed code and params: :func:`head_state` refuses a head whose tracked code or
params differ from its commit (stage outputs and ``dvc.lock`` aside), unless told to send the changes along.
:func:`snapshot` writes what the commit lacks (the head's ``dvc.lock`` after its upstream stages ran, and the
allowed changes) into the fan-out folder; :func:`prepare_workspace`, run by the job on its node, makes or
refreshes ``<folder>/workspaces/<stage>`` from the commit and that snapshot and points its DVC cache at the
head's. A stage keeps its workspace from one submission to the next, so its fine-tuning checkpoints
(``data/checkpoints`` inside it) are where a re-submitted or requeued job resumes from.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from dvc.repo import Repo

from spanft.errors import SpanftError

LOCK_FILE = "dvc.lock"


@dataclass(frozen=True)
class HeadState:
    """The head repo's commit and the files a job must take from its working tree rather than the commit."""

    root: Path
    commit: str
    changed: tuple[str, ...]  # files the stages read that differ from the commit (sent only when allowed)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        message = (done.stderr.strip().splitlines() or [_died(done.returncode)])[-1]
        raise SpanftError(f"{root}: git {' '.join(args)}: {message}")
    return done.stdout


def _died(code: int) -> str:
    """A git that said nothing: the signal that killed it (a file-size limit's SIGXFSZ), else its status."""
    try:
        return f"killed by {signal.Signals(-code).name}" if code < 0 else f"failed (exit {code})"
    except ValueError:
        return f"failed (exit {code})"


def head_state(root: Path, outputs: list[str], inputs: list[str], allow_dirty: bool) -> HeadState:
    """The head's commit; a head whose uncommitted changes touch what the stages read is refused.

    What the stages read: ``inputs`` (every stage dependency inside the repo: code, params files, data
    folders) and ``dvc.yaml``. ``outputs`` (files a run rewrites, such as git-tracked reports) and ``dvc.lock``
    may differ from the commit; so may anything else (a README, notes). With ``allow_dirty`` the changed
    files are sent along instead.
    """
    if git(root, "rev-parse", "--show-prefix").strip():
        raise SpanftError(f"{root}: the DVC project is a subfolder of its git repository; spanft fanout needs "
                          f"dvc.yaml at the top of the git repository")
    try:
        commit = git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").strip()
    except SpanftError:
        raise SpanftError(f"{root}: no commit yet; the jobs run a commit: commit the project first") from None
    # -z: paths as they are (no quoting of spaces or non-ASCII names), relative to the top
    tracked = git(root, "diff", "--name-only", "--no-renames", "-z", "HEAD").split("\0")
    untracked = git(root, "ls-files", "-z", "--others", "--exclude-standard").split("\0")
    read = [*inputs, "dvc.yaml"]
    changed = sorted({path for path in [*tracked, *untracked]
                      if path and _is_inside(path, read) and not _is_inside(path, [LOCK_FILE, *outputs])})
    if changed and not allow_dirty:
        shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        raise SpanftError(f"{root}: uncommitted changes ({shown}): the jobs run the commit, so commit them first "
                          f"(or pass --allow-dirty to send the working tree's files with the jobs)")
    return HeadState(root, commit, tuple(changed))


def _is_inside(path: str, places: list[str]) -> bool:
    return any(path == place or path.startswith(place.rstrip("/") + "/") for place in places)


def same_contents(root: Path, first: str, second: str) -> bool:
    """Two commits hold the same files (one tree): a ``commit --amend`` or a rebase that changed no file is no
    change to what the jobs ran. False when either commit is gone (a ``gc --prune`` took it)."""
    if first == second:
        return True
    try:
        return git(root, "rev-parse", f"{first}^{{tree}}") == git(root, "rev-parse", f"{second}^{{tree}}")
    except SpanftError:
        return False


def snapshot(head: HeadState, folder: Path) -> Path:
    """Copy the head's ``dvc.lock`` and its allowed changes into ``<folder>/snapshots/<digest>``; return it.

    The folder is named by its content, so jobs of one submission share it and a later submission with other
    files gets its own.
    """
    files = [LOCK_FILE, *head.changed] if (head.root / LOCK_FILE).exists() else list(head.changed)
    digest = hashlib.sha256(head.commit.encode())
    for name in files:
        source = head.root / name
        digest.update(name.encode() + b"\0" + (source.read_bytes() if source.is_file() else b"<deleted>") + b"\0")
    target = folder / "snapshots" / digest.hexdigest()[:16]
    if not target.is_dir():
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        for name in files:
            source, copy = head.root / name, partial / "files" / name
            copy.parent.mkdir(parents=True, exist_ok=True)
            if source.is_file():
                shutil.copy2(source, copy)
        (partial / "deleted").parent.mkdir(parents=True, exist_ok=True)
        (partial / "deleted").write_text("".join(f"{n}\n" for n in files if not (head.root / n).is_file()))
        partial.rename(target)
    return target


def prepare_workspace(head_root: Path, commit: str, snapshot_dir: Path, workspace: Path, cache_dir: str) -> None:
    """Make ``workspace`` the head's commit plus its snapshot, with the head's DVC cache (run on the node).

    Every git and dvc command runs inside the workspace's own repository: one whose ``.git`` is broken (a job
    killed while cloning) is cloned again rather than let git walk up to the head's repository, which holds the
    job folder. The clone has objects of its own (hard links where it can), so a ``git gc`` of the head never
    breaks it; a stale ``index.lock`` (a job killed during a checkout) is cleared, since one job at a time holds
    the workspace.
    """
    clone_workspace(head_root, workspace)
    checkout_commit(head_root, commit, workspace)
    apply_snapshot(snapshot_dir, workspace)
    point_cache(head_root, workspace, cache_dir)


def clone_workspace(head_root: Path, workspace: Path) -> None:
    """A clone of the head at ``workspace`` (once: a later submission reuses it), unless it has one already."""
    if not _own_repository(workspace):
        shutil.rmtree(workspace / ".git", ignore_errors=True)  # the run's checkpoints stay
        workspace.mkdir(parents=True, exist_ok=True)
        git(workspace.parent, "clone", "--quiet", "--no-checkout", str(head_root), str(workspace / ".clone"))
        (workspace / ".clone" / ".git").rename(workspace / ".git")
        shutil.rmtree(workspace / ".clone")


def checkout_commit(head_root: Path, commit: str, workspace: Path) -> None:
    """The workspace at ``commit`` (fetched from the head when the clone lacks it)."""
    (workspace / ".git" / "index.lock").unlink(missing_ok=True)
    if not _has_commit(workspace, commit):  # a fresh clone has it already: no second pass over the head
        git(workspace, "fetch", "--quiet", str(head_root), commit)
    git(workspace, "checkout", "--quiet", "--force", "--detach", commit)


def _has_commit(workspace: Path, commit: str) -> bool:
    done = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=workspace, capture_output=True,
                          stdin=subprocess.DEVNULL)
    return done.returncode == 0


def apply_snapshot(snapshot_dir: Path, workspace: Path) -> None:
    """The head's ``dvc.lock`` and allowed changes over the commit; a killed job's DVC lock cleared."""
    files = snapshot_dir / "files"
    for source in sorted(p for p in files.rglob("*") if p.is_file()):
        target = workspace / source.relative_to(files)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    for name in (snapshot_dir / "deleted").read_text().splitlines():
        (workspace / name).unlink(missing_ok=True)
    # a job killed mid-run leaves DVC's read/write lock behind; only this stage's jobs use this workspace
    (workspace / ".dvc" / "tmp" / "rwlock").unlink(missing_ok=True)


def point_cache(head_root: Path, workspace: Path, cache_dir: str) -> None:
    """The workspace's DVC config: the head's local one (remotes, credentials git does not carry), the head's
    cache, and links rather than copies (every job of a paper run would otherwise copy its backbone: 1.3 GB
    for a large one). Written through DVC's own config API in this process (two ``dvc config`` processes
    would each pay DVC's start-up)."""
    from dvc.config import Config

    head_local_config = head_root / ".dvc" / "config.local"
    if head_local_config.is_file():
        shutil.copy2(head_local_config, workspace / ".dvc" / "config.local")
    with Config(dvc_dir=str(workspace / ".dvc"), validate=False).edit("local") as conf:
        conf.setdefault("cache", {}).update({"dir": cache_dir, "type": "reflink,hardlink,symlink,copy"})


def _own_repository(workspace: Path) -> bool:
    """``workspace`` is the top of a git repository of its own (never one above it)."""
    if not (workspace / ".git").is_dir():
        return False
    done = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=workspace, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, env={**os.environ, "GIT_CEILING_DIRECTORIES": str(workspace.parent)})
    return done.returncode == 0 and os.path.samefile(done.stdout.strip(), workspace)


def checkout_outputs(workspace: Path, targets: tuple[str, ...]) -> None:
    """``dvc checkout TARGETS`` in the workspace, through DVC's API in this process (the job has DVC imported
    already; a ``dvc`` process would pay DVC's start-up once more). A failure is one line."""
    from dvc.exceptions import DvcException

    real = workspace.resolve()
    try:
        with contextlib.chdir(real), Repo(str(real)) as repo:
            repo.checkout(targets=list(targets))
    except DvcException as error:
        said = [line for line in str(error).splitlines() if line.strip()]
        raise SpanftError(f"{workspace}: dvc checkout {' '.join(targets[:3])}: "
                          f"{said[0] if said else type(error).__name__}") from None


def cache_dir(root: Path) -> str:
    """The head's DVC cache directory (``dvc cache dir``), which the jobs share; inside the project it is named
    under ``root`` as given (symbolic links kept), not under the target DVC may have resolved it to."""
    with Repo(str(root.resolve())) as repo:
        cache = os.path.abspath(repo.cache.local_cache_dir)
        inside = os.path.relpath(cache, os.path.abspath(repo.root_dir))
    return str(root / inside) if not inside.startswith("..") else cache
