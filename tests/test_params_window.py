"""Issue 43, class 2: no stage stays recorded against params it did not use, whatever the moment of an edit.

DVC reads params.yaml for a stage's lock entry after the stage's command has ended, so an edit saved in between
is written into dvc.lock beside outputs made from the old value. A real `dvc repro -f -s count_ngrams` runs
while another thread saves `ngrams.min_count` 2 -> 3 (or back) at moments spread from the stage's start to
after DVC's lock write, plus once exactly in the window (the edit chained after the script in the stage's
command). After each run the truth comes from the output itself: counts.tsv holds n-grams seen twice exactly
when min_count 2 made it. A lying record is a dvc.lock entry that claims this counts.tsv (its md5) with the
other min_count; it must never pass the params check (`check_params` stage, `spanft check-params`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_graph import dvc, new_project, reduced_params  # noqa: E402

from spanft.errors import SpanftError  # noqa: E402
from spanft.stage.records import check_lock_records  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("dvc") is None or shutil.which("git") is None, reason="needs dvc, git")

EDIT = "import re, sys; p = open('params.yaml').read(); open('params.yaml', 'w').write(" \
       "re.sub(r'min_count: \\d+', 'min_count: ' + sys.argv[1], p))"


def _set_min_count(project: Path, value: int) -> None:
    subprocess.run([sys.executable, "-c", EDIT, str(value)], cwd=project, check=True)


def _used_min_count(project: Path) -> int | None:
    """What min_count made counts.tsv, from its content: 2 keeps n-grams seen twice, 3 drops them."""
    counts = project / "data" / "ngrams" / "counts.tsv"
    if not counts.is_file():
        return None
    smallest = min(int(line.rsplit("\t", 1)[1]) for line in counts.read_text(encoding="utf-8").splitlines())
    return 2 if smallest == 2 else 3


def _claimed(project: Path) -> int | None:
    """The min_count dvc.lock records for count_ngrams, if its entry claims the counts.tsv on disk."""
    lock = yaml.safe_load((project / "dvc.lock").read_text(encoding="utf-8"))["stages"].get("count_ngrams")
    counts = project / "data" / "ngrams" / "counts.tsv"
    if lock is None or not counts.is_file():
        return None
    md5 = {out["path"]: out["md5"] for out in lock["outs"]}["data/ngrams/counts.tsv"]
    if md5 != hashlib.md5(counts.read_bytes()).hexdigest():  # noqa: S324
        return None
    return lock["params"]["params.yaml"]["ngrams"]["min_count"]


def _edit_after(project: Path, new: int, delay: float, after_record: bool) -> None:
    if after_record:  # the script's last write: then it exits, and DVC hashes and locks
        record = project / "data" / "params-used" / "count_ngrams.yaml"
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.001)
    time.sleep(delay)
    _set_min_count(project, new)


def _trial(project: Path, old: int, new: int, delay: float | None, after_record: bool = False) -> tuple[bool, bool]:
    """One forced run with an edit ``delay`` seconds after its start, or after the script wrote its record
    (None: chained in the command); (dvc.lock lies, the check lets the lie pass)."""
    _set_min_count(project, old)
    editor = None
    if delay is not None:
        editor = threading.Thread(target=_edit_after, args=(project, new, delay, after_record))
        editor.start()
    dvc(project, "repro", "-f", "-s", "count_ngrams", check=False)
    if editor is not None:
        editor.join()
    claimed, used = _claimed(project), _used_min_count(project)
    lies = claimed is not None and claimed != used
    try:
        check_lock_records(root=project)
        passed = True
    except SpanftError as exc:
        assert "dvc repro -f -s count_ngrams" in str(exc) and "ngrams" in str(exc)
        passed = False
    return lies, lies and passed


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    params = reduced_params()
    params["ngrams"]["min_count"] = 2
    project = new_project(tmp_path_factory.mktemp("window"), params)
    dvc(project, "repro", "-s", "corpus")
    return project


def test_an_edit_at_any_moment_never_leaves_a_lying_record_unseen(project):
    start = time.monotonic()
    dvc(project, "repro", "-f", "-s", "count_ngrams")
    took = time.monotonic() - start  # the whole command: start-up, the script, hashing, the lock
    # from the start to past the lock write, and closely after the script's end, where DVC's window is
    moments = [(took * i / 5, False) for i in range(7)] + [(d, True) for d in (0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1)]
    results = [_trial(project, 2 + i % 2, 3 - i % 2, delay, after) for i, (delay, after) in enumerate(moments)]
    print(f"{sum(lies for lies, _ in results)} of {len(moments)} edits left dvc.lock lying; a run took {took:.2f} s")
    assert [unseen for _, unseen in results] == [False] * len(moments)


def test_an_edit_in_the_window_is_a_lie_in_dvc_lock_that_the_check_names(project):
    """The edit saved right after the script ends, before DVC reads params.yaml for the lock (chained in the
    stage's command, so every run hits the window): DVC records the new value, the check refuses it."""
    spec = yaml.safe_load((project / "dvc.yaml").read_text(encoding="utf-8"))
    original = spec["stages"]["count_ngrams"]["cmd"]
    spec["stages"]["count_ngrams"]["cmd"] = f'{original} && {sys.executable} -c "{EDIT}" 3'
    (project / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    try:
        lies, unseen = _trial(project, 2, 3, None)
    finally:
        spec["stages"]["count_ngrams"]["cmd"] = original
        (project / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    assert lies  # DVC's own window: dvc.lock says 3 beside counts made with 2
    assert not unseen
    done = subprocess.run(["dvc", "repro", "check_params"], cwd=project, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(project / "src")})
    assert done.returncode != 0
    assert "count_ngrams is recorded with ngrams" in done.stdout + done.stderr
    # the line names the leaf key and both values, and its fix, followed to the letter, loses nothing
    with pytest.raises(SpanftError) as caught:
        check_lock_records(root=project)
    line = str(caught.value)
    assert "recorded with ngrams.min_count 3, but its outputs were made with 2 " in line, line
    fix = line.rsplit("re-run it: ", 1)[1]
    subprocess.run(fix.split(), cwd=project, check=True, capture_output=True)
    check_lock_records(root=project)
    assert _claimed(project) == _used_min_count(project) == 3  # the outputs follow params.yaml, and the lock says so
    for obj in (project / ".dvc" / "cache" / "files" / "md5").glob("*/*"):
        if not obj.name.endswith(".dir"):
            assert hashlib.md5(obj.read_bytes()).hexdigest() == obj.parent.name + obj.name  # noqa: S324
