"""Stages killed with SIGKILL mid-way leave nothing DVC would take as a complete output; fine-tuning resumes.

Each stage runs as ``python -m spanft.cli ...`` in its own session, and the whole session (the stage and any
worker processes) is killed with SIGKILL once the test sees a sign of progress on disk: the temporary file
that the atomic writer fills beside the output, or a checkpoint's completion mark. No fixed sleeps.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest

from spanft.data.registry import get_task
from spanft.train.checkpoints import ELAPSED_FILE, prepare_checkpoint_dir
from spanft.train.finetune import MEASURED_KEYS
from spanft.train.options import FinetuneOptions
from spanft.train.preflight import RUN_MARKER

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "spanft.cli", *args], cwd=cwd, env=ENV, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _run(args: list[str], cwd: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "spanft.cli", *args], cwd=cwd, env=ENV, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


def _kill_when(process: subprocess.Popen, sign: Callable[[], bool], timeout: float = 120.0) -> None:
    """SIGKILL the process's whole session as soon as ``sign()`` holds; fail if it ended first."""
    deadline = time.monotonic() + timeout
    while not sign():
        if process.poll() is not None:
            pytest.fail(f"the stage ended (rc {process.returncode}) before the sign of progress: "
                        f"{process.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail("no sign of progress before the timeout")
        time.sleep(0.002)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    process.stderr.close()
    assert process.returncode == -signal.SIGKILL


def _partial_temp(target: Path) -> Callable[[], bool]:
    """True once a new temporary file of the atomic writer beside ``target`` holds bytes (writing has begun).

    Call it before starting the stage: temporary files left by earlier kills do not count.
    """
    earlier = set(target.parent.glob(f".{target.name}.*.tmp"))

    def sign() -> bool:
        for tmp in set(target.parent.glob(f".{target.name}.*.tmp")) - earlier:
            try:
                if tmp.stat().st_size > 0:
                    return True
            except FileNotFoundError:  # renamed into place between glob and stat
                pass
        return False

    return sign


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """~2M words: count-ngrams with --min-count 1 writes ~2.5M lines (about a second of writing)."""
    from spanft.data.corpus import write_synthetic_corpus

    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    write_synthetic_corpus(path, 2_000_000, seed=0)
    return path


def test_killed_count_ngrams_leaves_no_output_then_keeps_the_previous_one(corpus, tmp_path):
    counts = tmp_path / "ngrams" / "counts.tsv"
    counts.parent.mkdir()
    writing = _partial_temp(counts)
    _kill_when(_start(["count-ngrams", str(corpus), "--out", str(counts), "--min-count", "1"], tmp_path), writing)
    assert not counts.exists()

    _run(["count-ngrams", str(corpus), "--out", str(counts), "--min-count", "1", "--max-n", "3"], tmp_path)
    complete = counts.read_bytes()
    writing = _partial_temp(counts)
    _kill_when(_start(["count-ngrams", str(corpus), "--out", str(counts), "--min-count", "1"], tmp_path), writing)
    assert counts.read_bytes() == complete, "the previous complete counts file is intact"
    # the killed writer's temporary file stays beside it, under a name DVC does not track; the next write of
    # the same output sweeps it (the earlier killed run's temporary is already gone)
    left = [p.name for p in counts.parent.iterdir() if p != counts]
    assert len(left) == 1 and left[0].startswith(".counts.tsv.") and left[0].endswith(".tmp")
    _run(["count-ngrams", str(corpus), "--out", str(counts), "--min-count", "1", "--max-n", "3"], tmp_path)
    assert [p.name for p in counts.parent.iterdir()] == ["counts.tsv"]
    assert counts.read_bytes() == complete


def _big_counts(path: Path, lines: int) -> None:
    """A canonical counts file (count descending, then text) of ``lines`` bigrams."""
    words = np.char.add("w", np.arange(lines).astype(str))
    counts = np.arange(lines, 0, -1) + 10
    text = pd.Series(words).str.cat(pd.Series(words), sep=" ") + "\t" + pd.Series(counts).astype(str)
    path.write_text("\n".join(text) + "\n", encoding="utf-8")


def test_killed_build_dict_leaves_no_output_then_keeps_the_previous_one(tmp_path):
    counts = tmp_path / "counts.tsv"
    _big_counts(counts, 2_000_000)
    dictionary = tmp_path / "dicts" / "main.tsv"
    dictionary.parent.mkdir()
    writing = _partial_temp(dictionary)
    _kill_when(_start(["build-dict", str(counts), "--size", "2000000", "--out", str(dictionary)], tmp_path), writing)
    assert not dictionary.exists()

    _run(["build-dict", str(counts), "--size", "1000", "--out", str(dictionary)], tmp_path)
    complete = dictionary.read_bytes()
    assert complete.count(b"\n") == 1000
    writing = _partial_temp(dictionary)
    _kill_when(_start(["build-dict", str(counts), "--size", "2000000", "--out", str(dictionary)], tmp_path), writing)
    assert dictionary.read_bytes() == complete


# ------------------------------------------------------------------------------------------ fine-tuning


def _random_spans(words, rng: np.random.Generator) -> list[int]:
    spans, left = [], len(words)
    while left:
        spans.append(int(min(left, rng.integers(1, 5))))
        left -= spans[-1]
    return spans


@pytest.fixture(scope="module")
def task_workspace(tmp_path_factory) -> Path:
    """Segmented synthetic sst2 (enough training examples for an epoch to take a noticeable time) and a backbone."""
    from spanft.data.columns import SyntheticSizes
    from spanft.data.prepare import load_task, write_prepared
    from spanft.model.build import BackboneConfig, make_backbone

    root = tmp_path_factory.mktemp("finetune")
    write_prepared(load_task("sst2", "synthetic", sizes=SyntheticSizes(train=320, eval=40, test=20)), root / "prepared")
    (root / "segmented").mkdir()
    rng = np.random.default_rng(0)
    lines = []
    for file in sorted((root / "prepared").glob("*.parquet")):
        frame = pd.read_parquet(file)
        lines += [" ".join(words) for words in frame["words_a"]]
        frame["spans_a"] = [_random_spans(words, rng) for words in frame["words_a"]]
        frame.to_parquet(root / "segmented" / file.name)
    (root / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = BackboneConfig(vocab_size=800, hidden=32, layers=1, heads=2, intermediate=64, max_len=128, mlm_steps=0)
    make_backbone(root / "corpus.txt", root / "backbone", cfg)
    return root


EPOCHS, BATCH, TRAIN = 3, 16, 320
STEPS_PER_EPOCH = TRAIN // BATCH


def _finetune_args(root: Path, out: Path, checkpoints: Path) -> list[str]:
    return ["finetune", "--task", "sst2", "--variant", "sf", "--backbone", str(root / "backbone"),
            "--data", str(root / "segmented"), "--out", str(out), "--checkpoint-dir", str(checkpoints),
            "--seed", "4", "--epochs", str(EPOCHS), "--lr", "2e-3", "--batch-size", str(BATCH),
            "--eval-batch-size", "32", "--max-seq-len", "64"]


def _complete_checkpoint(directory: Path) -> Callable[[], bool]:
    return lambda: any(directory.glob(f"checkpoint-*/{ELAPSED_FILE}"))


def _without_time(summary: dict) -> dict:
    return {key: value for key, value in summary.items() if key not in (*MEASURED_KEYS, "resumed_from")}


def test_killed_finetune_leaves_no_run_and_resumes_to_the_same_result(task_workspace, tmp_path):
    root = task_workspace
    reference = tmp_path / "runs" / "reference"
    _run(_finetune_args(root, reference, tmp_path / "ckpt" / "reference"), tmp_path)

    out, checkpoints = tmp_path / "runs" / "resumed", tmp_path / "ckpt" / "resumed"
    killed = _start(_finetune_args(root, out, checkpoints), tmp_path)
    _kill_when(killed, _complete_checkpoint(checkpoints))
    assert not out.exists(), "no run directory (so no metrics.json) after a kill"
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".resumed.")], "no half-written run directory"
    complete = sorted(int(p.parent.name.split("-")[1]) for p in checkpoints.glob(f"checkpoint-*/{ELAPSED_FILE}"))
    # the kill follows the first epoch's mark within milliseconds; an epoch takes far longer
    assert complete == [STEPS_PER_EPOCH], complete

    _run(_finetune_args(root, out, checkpoints), tmp_path)
    resumed = json.loads((out / "metrics.json").read_text())
    expected = json.loads((reference / "metrics.json").read_text())
    assert resumed["resumed_from"] == f"checkpoint-{STEPS_PER_EPOCH}" and expected["resumed_from"] is None
    assert _without_time(resumed) == _without_time(expected)
    for split in ("validation.tsv", "test.tsv"):
        assert (out / "predictions" / split).read_bytes() == (reference / "predictions" / split).read_bytes()
    assert not checkpoints.exists(), "checkpoints are cleared after the run completes"


# ------------------------------------------------------------------------------ checkpoint directory logic


def _options(root: Path, checkpoints: Path, **overrides) -> FinetuneOptions:
    values = dict(task="sst2", backbone=str(root / "backbone"), variant="sf", data=str(root / "segmented"),
                  out=str(root / "unused"), checkpoint_dir=str(checkpoints), epochs=EPOCHS)
    values.update(overrides)
    return FinetuneOptions(**values)


def _fake_checkpoint(directory: Path, step: int, complete: bool) -> Path:
    checkpoint = directory / f"checkpoint-{step}"
    checkpoint.mkdir(parents=True)
    (checkpoint / "model.safetensors").write_bytes(b"weights")
    if complete:
        (checkpoint / ELAPSED_FILE).write_text(json.dumps({"seconds": 1.5}))
    return checkpoint


def test_a_checkpoint_killed_while_saving_is_removed_and_the_previous_one_resumed(task_workspace, tmp_path):
    options = _options(task_workspace, tmp_path / "ckpt")
    task = get_task("sst2")
    assert prepare_checkpoint_dir(options, task) is None  # a fresh directory: marker written
    complete = _fake_checkpoint(tmp_path / "ckpt", 20, complete=True)
    partial = _fake_checkpoint(tmp_path / "ckpt", 40, complete=False)
    assert prepare_checkpoint_dir(options, task, main=False) == str(complete)  # a replica only reads
    assert partial.exists()
    assert prepare_checkpoint_dir(options, task) == str(complete)
    assert not partial.exists() and complete.exists()


def test_replicas_never_change_the_checkpoint_directory(task_workspace, tmp_path):
    options = _options(task_workspace, tmp_path / "ckpt")
    task = get_task("sst2")
    prepare_checkpoint_dir(options, task)
    checkpoint = _fake_checkpoint(tmp_path / "ckpt", 20, complete=True)
    other = _options(task_workspace, tmp_path / "ckpt", lr=1e-3)  # other settings: not its checkpoints
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "ckpt").rglob("*"))
    assert prepare_checkpoint_dir(other, task, main=False) is None
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "ckpt").rglob("*")) == before
    assert prepare_checkpoint_dir(other, task) is None and not checkpoint.exists()  # the main one clears them


def test_checkpoints_of_another_process_count_or_a_torn_marker_are_not_resumed(task_workspace, tmp_path):
    options = _options(task_workspace, tmp_path / "ckpt")
    task = get_task("sst2")
    prepare_checkpoint_dir(options, task, processes=2)
    checkpoint = _fake_checkpoint(tmp_path / "ckpt", 20, complete=True)
    assert prepare_checkpoint_dir(options, task, processes=2) == str(checkpoint)
    assert prepare_checkpoint_dir(options, task, processes=1) is None and not checkpoint.exists()

    checkpoint = _fake_checkpoint(tmp_path / "ckpt", 20, complete=True)
    marker = tmp_path / "ckpt" / RUN_MARKER
    marker.write_text(marker.read_text()[:10])  # a marker cut short (written by older code, not atomically)
    assert prepare_checkpoint_dir(options, task) is None and not checkpoint.exists()
    assert json.loads(marker.read_text())["processes"] == 1
    shutil.rmtree(tmp_path / "ckpt")


def test_checkpoints_of_other_backbone_weights_or_other_code_are_not_resumed(task_workspace, tmp_path, monkeypatch):
    """A run killed, then re-run after a commit changed its backbone's files (same path) or spanft's code, starts
    over: resuming would mix the two in one run."""
    import spanft.train.checkpoints as checkpoints

    backbone = tmp_path / "backbone"
    shutil.copytree(task_workspace / "backbone", backbone)
    options = _options(task_workspace, tmp_path / "ckpt", backbone=str(backbone))
    task = get_task("sst2")
    prepare_checkpoint_dir(options, task)
    checkpoint = _fake_checkpoint(tmp_path / "ckpt", 20, complete=True)
    assert prepare_checkpoint_dir(options, task) == str(checkpoint)  # nothing changed: resumed
    config = backbone / "config.json"
    config.write_text(config.read_text().replace("{", '{"edited": 1, ', 1))
    assert prepare_checkpoint_dir(options, task) is None and not checkpoint.exists()

    checkpoint = _fake_checkpoint(tmp_path / "ckpt", 20, complete=True)
    assert prepare_checkpoint_dir(options, task) == str(checkpoint)
    monkeypatch.setattr(checkpoints, "_code_digest", lambda: "another commit of spanft")
    assert prepare_checkpoint_dir(options, task) is None and not checkpoint.exists()
