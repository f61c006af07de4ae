"""dvc.lock's entries read one by one and kept across stages (spanft.stage.lockfile) read as the whole file reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ruamel.yaml import YAMLError

from spanft.params.load import dvc_reading
from spanft.stage.lockfile import CACHE, lock_stages

ROOT = Path(__file__).resolve().parents[1]


def whole(text: str):
    """The oracle: ruamel's safe loader on the whole file, as DVC reads it."""
    return (dvc_reading(text) or {}).get("stages") or {}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / ".dvc" / "tmp").mkdir(parents=True)
    return tmp_path


def read(project: Path, text: str):
    (project / "dvc.lock").write_text(text, encoding="utf-8")
    return lock_stages(project / "dvc.lock", project)


def test_the_committed_lock_reads_as_a_whole_and_then_from_the_cache(project):
    text = (ROOT / "dvc.lock").read_text(encoding="utf-8")
    expected = whole(text)
    assert len(expected) > 10
    first = read(project, text)
    assert first == expected and list(first) == list(expected)
    kept = json.loads((project / CACHE).read_text(encoding="utf-8"))
    assert len(kept) == len(expected)
    assert read(project, text) == expected  # from the cache
    name = next(iter(expected))
    changed = text.replace(f"  {name}:\n", f"  {name}:\n    frozen: true\n", 1)
    assert read(project, changed) == whole(changed)
    assert read(project, changed)[name]["frozen"] is True


LOCK = """schema: '2.0'
stages:
  count_ngrams:
    cmd: python pipeline/count_ngrams.py
    params:
      params.yaml:
        ngrams.min_count: 10
        lr: 3e-05
        flag: yes
    outs:
    - path: data/params-used/count_ngrams.yaml
      hash: md5
      md5: 0123
  prepare_task@cola:
    cmd: "python pipeline/prepare_task.py
      --long"
    deps:
    - path: data/raw

      hash: md5
"""


@pytest.mark.parametrize("text", [
    LOCK,
    LOCK.replace("\n", "\r\n"),
    LOCK + "other: 1\n",  # a top-level key after the stages
    "%YAML 1.1\n---\n" + LOCK,  # a directive: YAML 1.1 reads `yes` as true
    LOCK.replace("  prepare_task@cola:", "  'prepare_task@cola':"),  # a quoted name
    LOCK.replace("        flag: yes", "        day: 2024-01-01"),  # a date: JSON cannot keep it
    LOCK.replace("  count_ngrams:\n    cmd:", "  count_ngrams:\n    when: &a 1\n    cmd:").replace(
        "      --long", "      --long\"\n    again: *a\n    x: \"y"),  # an alias to an anchor in another entry
    "schema: '2.0'\nstages: {a: {cmd: x}}\n",  # a flow mapping
    "schema: '2.0'\n",  # no stages
    "stages:\n",
    LOCK.replace("    cmd: python pipeline/count_ngrams.py", "    cmd: python pipeline/count_ngrams.py\n  # a note"),
])
def test_every_shape_reads_as_the_whole_file(project, text):
    assert read(project, text) == whole(text)
    assert read(project, text) == whole(text)  # again, from what was kept


@pytest.mark.parametrize("text", [
    LOCK + "  count_ngrams:\n    cmd: again\n",  # a name given twice
    LOCK.replace("    cmd: python pipeline/count_ngrams.py", "    cmd: *nowhere"),  # an alias to no anchor
    LOCK.replace("schema: '2.0'", "schema: [unclosed"),
])
def test_a_file_the_whole_reading_refuses_is_refused(project, text):
    with pytest.raises(YAMLError):
        whole(text)
    with pytest.raises(YAMLError):
        read(project, text)


def test_a_broken_cache_is_read_past(project):
    (project / CACHE).write_text('{"x": 1, "y": [1, 2, 3]', encoding="utf-8")
    assert read(project, LOCK) == whole(LOCK)
    (project / CACHE).write_text('{"x": 1, "y": [1, 2, 3]}', encoding="utf-8")
    assert read(project, LOCK) == whole(LOCK)


def test_without_dvc_s_temporary_folder_nothing_is_kept(tmp_path):
    (tmp_path / "dvc.lock").write_text(LOCK, encoding="utf-8")
    assert lock_stages(tmp_path / "dvc.lock", tmp_path) == whole(LOCK)
    assert not (tmp_path / ".dvc").exists()
