"""DVC's project as ``spanft recover-lock`` opens it: the repo at its root, its repo lock, a stage it runs now,
its ``dvc.yaml`` read, each DVC error one line; DVC's logger kept quiet. DVC is imported inside each function
(this module is imported by every stage, through :mod:`spanft.stage.lock_backup`)."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Any, Iterator

from spanft.errors import SpanftError

RECOVER = "spanft recover-lock"


@contextlib.contextmanager
def dvc_logs_quiet() -> Iterator[None]:
    """DVC's logger at warning level: it logs each changed dependency, and 'Stage ... is cached' even for a dry
    run-cache lookup, at info level."""
    dvc_log = logging.getLogger("dvc")
    level = dvc_log.level
    dvc_log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        dvc_log.setLevel(level)


@contextlib.contextmanager
def dvc_yaml_read() -> Iterator[None]:
    """DVC's error reading ``dvc.yaml`` (a syntax error, a key its schema lacks, a template it cannot fill) as
    one line: the lock cannot be checked against a graph DVC cannot read."""
    from dvc.exceptions import DvcException

    try:
        yield
    except DvcException as exc:
        raise SpanftError(f"dvc.yaml: DVC cannot read it ({first_line(exc)}): fix it (`dvc status` shows DVC's whole "
                          f"message), then run `{RECOVER}` again; dvc.lock unchanged") from None


def first_line(exc: BaseException) -> str:
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def running_stage(tree: Any) -> str | None:
    """``pid N: its command`` of a live dvc process that DVC's rwlock notes as using a stage's paths, or None."""
    import psutil

    if not isinstance(tree, dict):
        return None
    writes = (tree.get("write") or {}).values() if isinstance(tree.get("write"), dict) else []
    reads = (tree.get("read") or {}).values() if isinstance(tree.get("read"), dict) else []
    for info in [*writes, *(i for infos in reads if isinstance(infos, list) for i in infos)]:
        pid, command = (info.get("pid"), info.get("cmd")) if isinstance(info, dict) else (None, None)
        if not isinstance(pid, int) or not isinstance(command, str) or pid == os.getpid():
            continue
        try:  # a pid the dvc that wrote it left behind (killed) may be another process's now
            if " ".join(psutil.Process(pid).cmdline()).endswith(command):
                return f"pid {pid}: {command}"
        except psutil.Error:
            continue
    return None


@contextlib.contextmanager
def open_repo(root: Path) -> Iterator[Any]:
    """DVC's repo at ``root``'s real path, as the working directory (DVC resolves stage paths from there)."""
    from dvc.exceptions import DvcException
    from dvc.repo import Repo

    real = root.resolve()
    with contextlib.chdir(real):
        try:
            repo = Repo(str(real))
        except DvcException as exc:  # its config does not read, say: DVC's own first line
            raise SpanftError(f"{real}: DVC cannot open the project ({first_line(exc)}); dvc.lock unchanged") from None
        with repo:
            yield repo


@contextlib.contextmanager
def repo_locked(repo: Any) -> Iterator[None]:
    """DVC's repo lock, or one line when another dvc holds it (a running ``dvc repro``)."""
    from dvc.lock import LockError

    try:
        repo.lock.lock()
    except LockError:
        raise SpanftError("DVC's repo lock is held by another dvc process (a running dvc repro?): let it end "
                          f"(or stop it), then run `{RECOVER}` again") from None
    try:
        yield
    finally:
        repo.lock.unlock()
