"""The pipeline/ stage scripts: each reads its own params block from params.yaml, errors are one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def embedded() -> dict:
    return yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))


def run_stage(project: Path, script: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, str(ROOT / "pipeline" / script), *args], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)


def write_params(project: Path, tree: dict) -> None:
    (project / "params.yaml").write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")


@pytest.fixture
def segment_project(tmp_path: Path) -> Path:
    task = tmp_path / "data" / "tasks" / "cola"
    task.mkdir(parents=True)
    words = [["a", "b", "c", "d", "e"], ["x", "a", "b", "c", "d"]]
    pd.DataFrame({"idx": [0, 1], "words_a": words, "label": [1, 0]}).to_parquet(task / "train.parquet")
    (tmp_path / "main.tsv").write_text("a b c d\t9\na b c\t8\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("max_n, spans", [(3, [[3, 1, 1], [1, 3, 1]]), (4, [[4, 1], [1, 4]])])
def test_segment_stage_takes_the_longest_span_from_ngrams_max_n(segment_project, max_n, spans):
    tree = embedded()
    tree["ngrams"]["max_n"] = max_n
    write_params(segment_project, tree)
    done = run_stage(segment_project, "segment.py", "ngram", "data/tasks/cola", "out", "--dict", "main.tsv")
    assert done.returncode == 0, done.stderr
    frame = pd.read_parquet(segment_project / "out" / "train.parquet")
    assert [list(s) for s in frame["spans_a"]] == spans


def test_segment_stage_reads_words_lowercase(segment_project):
    tree = embedded()
    tree["words"]["lowercase"] = False
    write_params(segment_project, tree)
    (segment_project / "main.tsv").write_text("A b c d\t9\n", encoding="utf-8")
    done = run_stage(segment_project, "segment.py", "ngram", "data/tasks/cola", "out", "--dict", "main.tsv")
    assert done.returncode == 0, done.stderr
    frame = pd.read_parquet(segment_project / "out" / "train.parquet")
    assert [list(s) for s in frame["spans_a"]] == [[1] * 5, [1] * 5]  # "a b c d" is not "A b c d" when cased


def test_a_bad_params_file_is_one_line_before_any_work(segment_project):
    tree = embedded()
    tree["ngrams"]["max_n"] = 1
    write_params(segment_project, tree)
    done = run_stage(segment_project, "segment.py", "ngram", "data/tasks/cola", "out", "--dict", "main.tsv")
    assert done.returncode == 2 and not (segment_project / "out").exists()
    assert done.stderr.strip().splitlines() == [
        "spanft: error: params.yaml: ngrams must satisfy 2 <= min_n <= max_n <= 5 (the longest span segmentation matches), "
        "found min_n 2, max_n 1"]


def test_dictionary_stage_sizes_come_from_params(tmp_path):
    tree = embedded()
    tree["dict_size"], tree["dict_sizes"] = 2, [1, 3]
    write_params(tmp_path, tree)
    (tmp_path / "counts.tsv").write_text("a b\t9\nb c\t8\nc d\t7\n", encoding="utf-8")
    assert run_stage(tmp_path, "dictionary.py", "counts.tsv", "main.tsv").returncode == 0
    assert (tmp_path / "main.tsv").read_text(encoding="utf-8") == "a b\t9\nb c\t8\n"
    assert run_stage(tmp_path, "dictionary.py", "counts.tsv", "s3.tsv", "--size", "3").returncode == 0
    assert len((tmp_path / "s3.tsv").read_text(encoding="utf-8").splitlines()) == 3
    done = run_stage(tmp_path, "dictionary.py", "counts.tsv", "s2.tsv", "--size", "2")
    assert done.returncode == 2 and "--size 2 is not in params dict_sizes [1, 3]" in done.stderr
    assert not (tmp_path / "s2.tsv").exists()


def test_finetune_stage_refuses_a_run_the_studies_do_not_plan(tmp_path):
    write_params(tmp_path, embedded())
    done = run_stage(tmp_path, "finetune.py", "glue", "tiny", "snli", "sf", "1")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["spanft: error: params.yaml: studies.glue plans no run tiny/snli/sf/seed1"]


def test_run_stage_exit_codes(tmp_path, monkeypatch, capsys):
    from spanft.errors import SpanftError
    from spanft.stage.run import run_stage as run

    write_params(tmp_path, embedded())
    monkeypatch.chdir(tmp_path)
    assert run(lambda params: ["written", "files"]) == 0  # what a body returns is not an exit code

    def fail(plan) -> None:
        raise SpanftError(f"profile {plan.profile} says no")

    assert run(fail) == 2
    assert capsys.readouterr().err.strip() == "spanft: error: profile embedded says no"
