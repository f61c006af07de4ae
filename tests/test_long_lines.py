"""Issue 52, item 4: an error line cut to 300 characters keeps the decisive part whole (the key, the value
recorded, the real value, the fix) and shortens the context, with "…". One test per message that can run long:
the lying-lock line (a big section, long values, a long stage name and lock path), the refusal of a read-only
or cache-linked output (a long path), an unknown params key (a long list of valid keys)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest
from dvc.utils.serialize import dumps_yaml

from spanft.errors import MAX_LINE, Context, SpanftError, Value, _fail, one_line, parts
from spanft.stage.dvc_cache import read_only_fix
from spanft.stage.records import check_lock_records, record_path, write_record


def error_line(capsys, message: str) -> str:
    _fail(message, 2)
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    line = err.rstrip("\n")
    assert len(line) <= MAX_LINE, len(line)
    return line


# ------------------------------------------------------------------------------------------- the cut itself


def test_a_short_message_of_parts_reads_as_its_text():
    message = parts("a ", Value("'v'"), Context(" (why)"), "; fix: x")
    assert message == "a 'v' (why); fix: x" and one_line(message) == "a 'v' (why); fix: x"
    assert str(SpanftError(message)) == "a 'v' (why); fix: x"


@pytest.mark.parametrize("context, value", [(5_000, 10), (5_000, 400), (50, 5_000), (0, 100_000)])
def test_context_goes_first_then_the_middle_of_values_and_the_plain_parts_stay_whole(context, value):
    head, key, fix = "stage s: key ", "a.b", "; fix: dvc repro -f -s s"
    recorded, real = "r" * value + "R", "u" * value + "U"
    message = parts(head, key, " recorded ", Value(recorded), ", made with ", Value(real), Context(" c" * context), fix)
    shown = one_line(message, 200)
    assert len(shown) <= 200 and shown.startswith(head + key + " recorded ") and shown.endswith(fix), shown
    if len(head + key + recorded + real + fix) + 22 <= 200:  # the values fit once the context is gone
        assert f" recorded {recorded}, made with {real}" in shown
    else:
        assert re.search(r" recorded r+…r*R, made with u+…u*U", shown), shown  # both ends of each value shown
    if context:
        assert "…" in shown


def test_a_message_without_parts_is_still_cut_in_its_middle():
    shown = one_line("x" * 1000 + " tail", 100)
    assert len(shown) <= 100 and "characters left out" in shown and shown.endswith(" tail")


# ----------------------------------------------------------------------------------------- the lying lock


def _lying(tmp_path: Path, stage: str, recorded: dict, used: dict) -> None:
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        write_record(stage, {"ngrams": used})
    finally:
        os.chdir(cwd)
    digest = hashlib.md5((tmp_path / record_path(stage)).read_bytes()).hexdigest()  # noqa: S324
    lock = {"schema": "2.0", "stages": {stage: {"cmd": "x", "params": {"params.yaml": {"ngrams": recorded}},
                                                "outs": [{"path": record_path(stage), "md5": digest, "size": 1}]}}}
    (tmp_path / "dvc.lock").write_text(dumps_yaml(lock), encoding="utf-8")


def _lock_line(tmp_path: Path, capsys) -> str:
    with pytest.raises(SpanftError) as caught:
        check_lock_records(root=tmp_path)
    return error_line(capsys, caught.value.message)


def test_the_lying_lock_line_names_the_leaf_key_both_values_and_the_fix_in_a_big_section(tmp_path, capsys):
    big = {f"setting_{i:02d}_with_a_long_name": f"value number {i} " * 3 for i in range(40)}
    stage = "count_ngrams_for_the_whole_wikipedia_dump_of_two_thousand_and_twenty_three"
    _lying(tmp_path, stage, {**big, "min_count": 3}, {**big, "min_count": 2})
    line = _lock_line(tmp_path, capsys)
    assert f"stage {stage} is recorded with ngrams.min_count 3, but its outputs were made with 2" in line, line
    assert line.endswith(f"; re-run it: dvc repro -f -s {stage}"), line


def test_the_lying_lock_line_keeps_both_ends_of_long_values_and_the_fix(tmp_path, capsys):
    stage = "glue_sf@tiny-cola-1"
    _lying(tmp_path, stage, {"tokens": "a" * 2_000 + "RECORDED"}, {"tokens": "a" * 2_000 + "USED"})
    line = _lock_line(tmp_path, capsys)
    assert "recorded with ngrams.tokens 'aaa" in line and "RECORDED'" in line and "USED'" in line, line
    assert line.endswith(f"; re-run it: dvc repro -f -s {stage}"), line


def test_the_lying_lock_line_says_the_whole_story_when_it_fits(tmp_path, capsys):
    _lying(tmp_path, "count_ngrams", {"min_count": 3, "min_n": 2}, {"min_count": 2, "min_n": 2})
    line = _lock_line(tmp_path, capsys)
    assert line == ("spanft: error: dvc.lock: stage count_ngrams is recorded with ngrams.min_count 3, but its outputs "
                    "were made with 2 (its record in data/params-used: params.yaml saved after it ended, before DVC's "
                    "lock); re-run it: dvc repro -f -s count_ngrams")


# ------------------------------------------------------------------------------------------ long paths


def test_a_read_only_output_with_a_long_path_keeps_the_path_and_the_fix(tmp_path, capsys):
    folder = tmp_path / ("a_rather_long_folder_name_" * 3) / "results"
    folder.mkdir(parents=True)
    target = folder / "counts.tsv"
    target.write_text("x\n", encoding="utf-8")
    target.chmod(0o444)
    line = error_line(capsys, read_only_fix(target))
    assert line.startswith(f"spanft: error: output {str(target)[:40]}") and " is read-only" in line, line
    assert f"; make it writable: `chmod u+w {target}`" in line, line


def test_a_cache_linked_output_from_outside_its_project_keeps_the_whole_fix(tmp_path, capsys, monkeypatch):
    root = tmp_path / ("project_folder_with_a_long_name_" * 2)
    (root / ".dvc" / "cache" / "files" / "md5" / "ab").mkdir(parents=True)
    cached = root / ".dvc" / "cache" / "files" / "md5" / "ab" / ("c" * 30)
    cached.write_text("x\n", encoding="utf-8")
    cached.chmod(0o444)
    (root / "data").mkdir()
    (root / "data" / "counts.tsv").symlink_to(cached)
    monkeypatch.chdir(tmp_path)
    line = error_line(capsys, read_only_fix(root / "data" / "counts.tsv"))
    assert "is a symbolic link into DVC's cache" in line
    assert f"; run `cd {root} && dvc unprotect data/counts.tsv`" in line, line


def test_an_unknown_key_keeps_the_key_and_the_suggestion_before_the_list_of_valid_keys(capsys):
    from spanft.params.schema import check_params

    tree = {"dict_sise": 1}
    with pytest.raises(SpanftError) as caught:
        check_params(tree, "a/" * 60 + "params.yaml")
    line = error_line(capsys, caught.value.message)
    assert "unknown key dict_sise (did you mean dict_size?)" in line and line.endswith("…"), line


def test_a_directory_output_holding_your_file_keeps_its_name_and_the_fix(tmp_path, capsys):
    from spanft.fileio import atomic_path

    def write(target: Path) -> None:
        with atomic_path(target, made_by="prepare-task") as tmp:
            tmp.mkdir()
            (tmp / "train.parquet").write_text("new", encoding="utf-8")

    target = tmp_path / ("a_long_folder_name_" * 8) / "cola"
    write(target)
    mine = "my_" + "n" * 90 + "_notes.txt"
    (target / mine).write_text("mine\n", encoding="utf-8")
    with pytest.raises(SpanftError) as caught:
        write(target)
    line = error_line(capsys, caught.value.message)
    assert f" holds {mine}" in line and line.endswith("; move it out first"), line


@pytest.mark.parametrize("how", ["two begins", "not utf-8"])
def test_a_rewritten_file_with_a_long_path_keeps_the_block_the_lines_and_the_fix(tmp_path, capsys, how):
    from spanft.stage.textfile import block_lines, read_user_text, split_lines

    path = tmp_path / ("a_long_folder_name_" * 10) / "README.md"
    path.parent.mkdir()
    path.write_bytes(b"x\n<!-- b -->\nmine\n<!-- b -->\n<!-- e -->\n" if how == "two begins" else b"x\n\xff\n")
    with pytest.raises(SpanftError) as caught:
        text, _ = read_user_text(path)
        block_lines(split_lines(text), "<!-- b -->", "<!-- e -->", str(path), "scores")
    line = error_line(capsys, caught.value.message)
    if how == "two begins":
        assert "README.md: generated block 'scores' is not one clear block: 2 begin markers (lines 2, 4)" in line, line
        assert line.endswith("; nothing was changed: keep exactly one begin and one end line, in that order"), line
    else:
        assert "README.md:2: not valid UTF-8 (byte 0xff at column 1)" in line and line.endswith("save the file as UTF-8")
