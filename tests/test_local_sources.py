"""`spanft check-params` and every stage refuse a local source that is missing, naming the key and the path,
before any stage runs (issue 49): DVC alone would stop with a bare `[Errno 2]`. Oracle: the folders each case
deletes or leaves empty."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spanft.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _project(tmp_path: Path, change) -> Path:
    """profiles/embedded.yaml with ``change`` applied, as params.yaml beside a copy of data/raw's layout."""
    shutil.copytree(ROOT / "data" / "raw", tmp_path / "data" / "raw")
    tree = yaml.safe_load((ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8"))
    change(tree)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")
    return tmp_path


def _check(root: Path, monkeypatch, capsys) -> tuple[int, str]:
    monkeypatch.chdir(root)
    code = main(["check-params"])
    return code, capsys.readouterr().err


def test_the_shipped_layout_passes(tmp_path, monkeypatch, capsys):
    assert _check(_project(tmp_path, lambda tree: None), monkeypatch, capsys)[0] == 0


def _set(dotted: str, value):
    def change(tree: dict) -> None:
        *parents, last = dotted.split(".")
        node = tree
        for part in parents:
            node = node[part]
        node[last] = value
    return change


@pytest.mark.parametrize(("change", "said"), [
    (_set("data.dir", "/data/real"), "params.yaml: data.dir: /data/real not found"),
    (_set("corpus.local_path", "data/raw/wiki.train.tokens"),
     "params.yaml: corpus.local_path: data/raw/wiki.train.tokens not found"),
    (_set("backbones.local", {"mine": {"path": "models/mine"}}),
     "params.yaml: backbones.local.mine.path: models/mine not found"),
], ids=["data-dir", "corpus", "backbone"])
def test_a_missing_local_source_is_named_in_one_line(tmp_path, monkeypatch, capsys, change, said):
    code, err = _check(_project(tmp_path, change), monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1 and said in err, err


def test_a_missing_task_folder_and_an_empty_local_one_are_named(tmp_path, monkeypatch, capsys):
    root = _project(tmp_path, lambda tree: None)
    shutil.rmtree(root / "data" / "raw" / "glue_data" / "RTE")
    code, err = _check(root, monkeypatch, capsys)
    assert code == 2 and "data.dir / tasks.rte: data/raw/glue_data/RTE not found" in err, err
    (root / "data" / "raw" / "glue_data" / "RTE").mkdir()
    assert _check(root, monkeypatch, capsys)[0] == 0  # synthetic data: the empty folder is all DVC needs
    _set("data.source", "local")(tree := yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8")))
    tree["chunker"]["source"] = "conll"
    (root / "params.yaml").write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")
    code, err = _check(root, monkeypatch, capsys)
    assert code == 2 and "data.dir / tasks.cola: data/raw/glue_data/CoLA holds no files" in err, err


def test_a_stage_refuses_before_its_work(tmp_path):
    root = _project(tmp_path, _set("data.dir", "/data/real"))
    out = root / "data" / "params-checked.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "DVC_STAGE": "check_params", "DVC_ROOT": str(root)}
    done = subprocess.run([sys.executable, str(ROOT / "pipeline" / "check_params.py"), str(out)], cwd=root, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 2 and "data.dir: /data/real not found" in done.stderr, done.stderr
    assert not out.exists()


# The official files each task's reader needs (train and dev), written out by hand from the downloads' layouts
# (README, "Switching to real data"): the oracle for the split checks below.
OFFICIAL_NEEDED = {
    **{f"glue_data/{folder}": ("train.tsv", "dev.tsv")
       for folder in ("CoLA", "SST-2", "MRPC", "STS-B", "QQP", "QNLI", "RTE", "WNLI")},
    "glue_data/MNLI": ("train.tsv", "dev_matched.tsv", "dev_mismatched.tsv"),
    "snli_1.0": ("snli_1.0_train.jsonl", "snli_1.0_dev.jsonl"),
    "conll2003": ("eng.train", "eng.testa"),
}


def _both(*changes):
    def change(tree: dict) -> None:
        for one in changes:
            one(tree)
    return change


def _local_layout(tmp_path: Path) -> Path:
    """data.source local over data/raw holding every task's train and dev files (empty: only their names count)."""
    root = _project(tmp_path, _both(_set("data.source", "local"), _set("chunker.source", "conll")))
    for folder, names in OFFICIAL_NEEDED.items():
        for name in names:
            (root / "data" / "raw" / folder / name).write_text("", encoding="utf-8")
    return root


def test_a_local_task_folder_missing_a_split_is_named(tmp_path, monkeypatch, capsys):
    """A folder holding train.tsv alone passed ('ok'), and the repro then stopped at prepare_task."""
    root = _local_layout(tmp_path)
    assert _check(root, monkeypatch, capsys)[0] == 0
    (root / "data" / "raw" / "glue_data" / "CoLA" / "dev.tsv").unlink()
    code, err = _check(root, monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "data.dir / tasks.cola: data/raw/glue_data/CoLA lacks its cola validation file (dev.tsv)" in err, err
    (root / "data" / "raw" / "glue_data" / "CoLA" / "dev.tsv").write_text("", encoding="utf-8")
    (root / "data" / "raw" / "glue_data" / "MNLI" / "dev_mismatched.tsv").unlink()
    code, err = _check(root, monkeypatch, capsys)
    assert code == 2 and "(dev_mismatched.tsv)" in err and "tasks.mnli" in err, err
    (root / "data" / "raw" / "glue_data" / "MNLI" / "dev_mismatched.tsv").write_text("", encoding="utf-8")
    (root / "data" / "raw" / "conll2003" / "eng.testa").rename(root / "data" / "raw" / "conll2003" / "valid.txt")
    assert _check(root, monkeypatch, capsys)[0] == 0  # the IOB2 layout's name is as good
    (root / "data" / "raw" / "glue_data" / "RTE" / "test.tsv").write_text("", encoding="utf-8")
    (root / "data" / "raw" / "glue_data" / "RTE" / "dev.tsv").unlink()
    code, err = _check(root, monkeypatch, capsys)  # a test file is no dev file
    assert code == 2 and "tasks.rte: data/raw/glue_data/RTE lacks its rte validation file (dev.tsv)" in err, err


def test_a_local_corpus_folder_without_its_wikitext_file_is_named(tmp_path, monkeypatch, capsys):
    root = _local_layout(tmp_path)
    _both(_set("corpus.source", "local"))(tree := yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8")))
    (root / "params.yaml").write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")
    folder = root / "data" / "raw" / "wikitext-103"
    (folder / "wiki.valid.tokens").write_text("text\n", encoding="utf-8")  # a file, but not the one read
    code, err = _check(root, monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "corpus.local_path: data/raw/wikitext-103 lacks its WikiText file (wiki.train.tokens or wiki.train.raw)" \
        in err, err
    (folder / "wiki.train.raw").write_text("text\n", encoding="utf-8")
    assert _check(root, monkeypatch, capsys)[0] == 0


def test_a_local_task_named_by_a_file_is_refused(tmp_path, monkeypatch, capsys):
    root = _local_layout(tmp_path)
    tree = yaml.safe_load((root / "params.yaml").read_text(encoding="utf-8"))
    tree["tasks"]["rte"] = "glue_data/RTE/train.tsv"  # the file, not its folder
    (root / "params.yaml").write_text(yaml.safe_dump(tree, sort_keys=False), encoding="utf-8")
    code, err = _check(root, monkeypatch, capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert "tasks.rte: data/raw/glue_data/RTE/train.tsv is a file, not the rte folder" in err, err


def test_a_profile_is_checked_from_its_project(tmp_path, monkeypatch, capsys):
    """`spanft check-params profiles/embedded.yaml` (before `spanft profile embedded`): its paths are the project's,
    as DVC reads them once it is params.yaml, not the profiles/ folder's."""
    root = _project(tmp_path, lambda tree: None)
    shutil.copy(ROOT / "dvc.yaml", root / "dvc.yaml")
    (root / "profiles").mkdir()
    shutil.copy(ROOT / "profiles" / "embedded.yaml", root / "profiles" / "embedded.yaml")
    monkeypatch.chdir(root)
    assert main(["check-params", "profiles/embedded.yaml"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    shutil.rmtree(root / "data" / "raw" / "glue_data" / "RTE")
    assert main(["check-params", "profiles/embedded.yaml"]) == 2
    assert "tasks.rte: data/raw/glue_data/RTE not found" in capsys.readouterr().err
