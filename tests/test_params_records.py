"""The params records (spanft.stage.records) against dvc.lock as DVC itself writes it (its own YAML dumper)."""

from __future__ import annotations

import hashlib
import os
import shutil

import pytest
from dvc.utils.serialize import dumps_yaml  # what DVC writes dvc.lock with
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from spanft.errors import SpanftError
from spanft.stage.records import (
    check_lock_records,
    lying_stages,
    record_path,
    write_record,
)

SCALARS = st.one_of(st.integers(-10**12, 10**12), st.floats(allow_nan=False, allow_infinity=False, width=64),
                    st.booleans(), st.none(), st.text(max_size=12))
VALUES = st.recursive(SCALARS, lambda inner: st.dictionaries(st.text("abcxyz_", min_size=1, max_size=6), inner,
                                                             max_size=3), max_leaves=8)


def _lock(root, stage: str, params: dict, record_md5: str) -> None:
    lock = {"schema": "2.0", "stages": {stage: {"cmd": "python pipeline/x.py", "params": {"params.yaml": params},
                                                "outs": [{"path": "data/out.tsv", "md5": "0" * 32, "size": 1},
                                                         {"path": record_path(stage), "md5": record_md5, "size": 1}]}}}
    (root / "dvc.lock").write_text(dumps_yaml(lock), encoding="utf-8")


def _md5(path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()  # noqa: S324


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(used=st.dictionaries(st.sampled_from(["hparams.cola", "ngrams", "dict_size", "lr"]), VALUES, min_size=1),
       changed=st.booleans(), stage=st.sampled_from(["count_ngrams", "glue_sf@tiny-cola-1", "prepare_task@cola"]))
@example(used={"hparams.cola": {"lr": 3e-05, "epochs": 3}}, changed=False, stage="glue_sf@tiny-cola-1")
def test_a_record_matches_the_lock_dvc_writes_unless_the_values_differ(tmp_path_factory, used, changed, stage):
    root = tmp_path_factory.mktemp("records")
    cwd = os.getcwd()
    os.chdir(root)
    try:
        write_record(stage, used)
    finally:
        os.chdir(cwd)
    locked = dict(used)
    key = next(iter(locked))
    if changed:
        locked[key] = [locked[key]]  # a value no scalar or mapping equals
    _lock(root, stage, locked, _md5(root / record_path(stage)))
    found = lying_stages(root=root)
    assert [(s, k) for s, k, _, _ in found] == ([(stage, key)] if changed else [])


def test_a_record_that_is_not_the_one_dvc_recorded_is_not_judged(tmp_path):
    """Outputs not checked out (another commit's record on disk): dvc status says so, not this check."""
    os.chdir(tmp_path)
    write_record("count_ngrams", {"ngrams": {"min_count": 2}})
    _lock(tmp_path, "count_ngrams", {"ngrams": {"min_count": 50}}, "f" * 32)
    assert lying_stages(root=tmp_path) == []
    _lock(tmp_path, "count_ngrams", {"ngrams": {"min_count": 50}}, _md5(tmp_path / record_path("count_ngrams")))
    with pytest.raises(SpanftError, match=r"^dvc.lock: stage count_ngrams is recorded with ngrams.min_count 50, "
                                          r"but its outputs were made with 2 .*dvc repro -f -s count_ngrams$"):
        check_lock_records(root=tmp_path)


def test_only_the_stages_whose_outputs_are_read_and_never_the_one_re_running_are_judged(tmp_path):
    os.chdir(tmp_path)
    write_record("count_ngrams", {"ngrams": {"min_count": 2}})
    _lock(tmp_path, "count_ngrams", {"ngrams": {"min_count": 50}}, _md5(tmp_path / record_path("count_ngrams")))
    assert [s for s, *_ in lying_stages(root=tmp_path, inputs=["data/out.tsv"])] == ["count_ngrams"]
    assert [s for s, *_ in lying_stages(root=tmp_path, inputs=["data/"])] == ["count_ngrams"]  # a folder above
    assert lying_stages(root=tmp_path, inputs=["data/out.tsv.bak", "data/dicts/main.tsv"]) == []
    assert lying_stages(root=tmp_path, exclude="count_ngrams") == []


def test_a_stage_reading_outputs_that_dvc_lock_vouches_for_with_other_params_stops_before_its_work(tmp_path, capsys, monkeypatch):
    """`dvc repro dictionary` after an edit landed in DVC's lock window for count_ngrams: DVC calls count_ngrams
    unchanged, so the dictionary stage itself must refuse; count_ngrams, re-run as the fix says, must not."""
    from pathlib import Path

    from spanft.params.plan import load_plan
    from spanft.stage.run import declared_deps, run_stage

    root = Path(__file__).resolve().parents[1]
    for name in ("params.yaml", "dvc.yaml"):
        (tmp_path / name).write_bytes((root / ("profiles/embedded.yaml" if name == "params.yaml" else name)).read_bytes())
    shutil.copytree(root / "data" / "raw", tmp_path / "data" / "raw")  # the local paths params name
    monkeypatch.chdir(tmp_path)
    assert "data/ngrams/counts.tsv" in declared_deps("dictionary", load_plan())
    used = {"ngrams": {"min_count": 2}}
    write_record("count_ngrams", used)
    lock = {"schema": "2.0", "stages": {"count_ngrams": {
        "cmd": "python pipeline/count_ngrams.py", "params": {"params.yaml": {"ngrams": {"min_count": 50}}},
        "outs": [{"path": "data/ngrams/counts.tsv", "md5": "0" * 32, "size": 1},
                 {"path": record_path("count_ngrams"), "md5": _md5(tmp_path / record_path("count_ngrams")), "size": 1}]}}}
    (tmp_path / "dvc.lock").write_text(dumps_yaml(lock), encoding="utf-8")
    ran = []
    monkeypatch.setenv("DVC_STAGE", "dictionary")
    assert run_stage(lambda plan: ran.append("dictionary")) != 0
    assert ran == []
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "stage count_ngrams is recorded with" in err
    assert err.endswith("dvc repro -f -s count_ngrams")
    monkeypatch.setenv("DVC_STAGE", "count_ngrams")
    assert run_stage(lambda plan: ran.append("count_ngrams")) == 0
    assert ran == ["count_ngrams"]
