"""Local official layouts: files written here in the official formats (invented sentences only)."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from spanft.cli import main
from spanft.data.local_readers import read_local, to_iob2
from spanft.data.prepare import load_task, write_prepared
from spanft.data.registry import OFFICIAL_FOLDERS, TASKS, get_task
from spanft.errors import SpanftError


def write(path: Path, lines: list[str], bom: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(("\ufeff" if bom else "") + "".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def tsv(*fields: object) -> str:
    return "\t".join(str(f) for f in fields)


# ------------------------------------------------------------------ one small official-format copy per GLUE task

MNLI_HEAD = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
             "sentence1_parse", "sentence2_parse", "sentence1", "sentence2"]


def mnli_row(i: int, s1: str, s2: str, labels: list[str]) -> str:
    return tsv(i, 100 + i, f"{100 + i}e", "fiction", f"( {s1} )", f"( {s2} )", f"(ROOT {s1})", f"(ROOT {s2})", s1, s2, *labels)


def folder(glue_data: Path, name: str) -> Path:
    """A GLUE task's folder under ``glue_data`` (the official layout, params tasks' default)."""
    return glue_data / OFFICIAL_FOLDERS[name].removeprefix("glue_data/")


def write_glue(root: Path) -> Path:
    """One small copy per GLUE task in ``root`` (a ``glue_data`` directory): ``root/CoLA/train.tsv`` ..."""
    # CoLA: no header; source, label, original mark, sentence. Test: index, sentence.
    write(root / "CoLA/train.tsv", [tsv("zq01", 1, "", "The blorp sang ."), tsv("zq01", 0, "*", "Sang the the blorp .")])
    write(root / "CoLA/dev.tsv", [tsv("zq02", 1, "", "A frim ran .")])
    write(root / "CoLA/test.tsv", ["index\tsentence", tsv(0, "Dax slept ."), tsv(1, "Slept dax .")])
    # SST-2: header; "NA" and "null" are words, quotes are plain characters (quoting off).
    write(root / "SST-2/train.tsv", ["sentence\tlabel", tsv("NA", 0), tsv('a "wuzzy ride', 1), tsv("null and void-ish", 0)])
    write(root / "SST-2/dev.tsv", ["sentence\tlabel", tsv("glorp is fine", 1)])
    write(root / "SST-2/test.tsv", ["index\tsentence", tsv(0, "meh glorp")])
    # MRPC: train starts with a BOM.
    head = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    write(root / "MRPC/train.tsv", [head, tsv(1, 11, 12, "Zed bought fribs .", "Zed purchased fribs ."),
                                    tsv(0, 13, 14, "Qua left .", "Qua stayed .")], bom=True)
    write(root / "MRPC/dev.tsv", [head, tsv(1, 15, 16, "Blen won .", "Blen triumphed .")])
    write(root / "MRPC/test.tsv", ["index\t#1 ID\t#2 ID\t#1 String\t#2 String", tsv(7, 17, 18, "Vo ate .", "Vo dined .")])
    # STS-B: ten fields, the score last.
    sts = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"
    write(root / "STS-B/train.tsv", [sts + "\tscore", tsv(0, "main-news", "f", "2020", 1, "none", "none", "A zib hops .", "A zib jumps .", "4.250"),
                                     tsv(1, "main-news", "f", "2020", 2, "none", "none", "Krel swims .", "Fop reads .", "0.000")])
    write(root / "STS-B/dev.tsv", [sts + "\tscore", tsv(0, "main-forum", "f", "2021", 3, "none", "none", "Mok naps .", "Mok sleeps .", "5.000")])
    write(root / "STS-B/test.tsv", [sts, tsv(0, "main-news", "f", "2022", 4, "none", "none", "Tiv sings .", "Tiv hums .")])
    # QQP: id qid1 qid2 question1 question2 is_duplicate; test: id question1 question2.
    qqp = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate"
    write(root / "QQP/train.tsv", [qqp, tsv(5, 1, 2, "How do zorbs fly?", "Why do zorbs fly?", 0),
                                   tsv(6, 3, 4, "What is a quib?", "What's a quib?", 1)])
    write(root / "QQP/dev.tsv", [qqp, tsv(9, 5, 6, "Is glim real?", "Is glim real ?", 1)])
    write(root / "QQP/test.tsv", ["id\tquestion1\tquestion2", tsv(0, "Can wugs run?", "Do wugs run?")])
    # MNLI: train 12 fields, dev 16, test 10; diagnostic (read inside the MNLI folder): index sentence1 sentence2.
    write(root / "MNLI/train.tsv", ["\t".join(MNLI_HEAD + ["label1", "gold_label"]),
                                    mnli_row(0, "The vop slept .", "The vop rested .", ["entailment", "entailment"]),
                                    mnli_row(1, "The vop slept .", "The vop ran .", ["neutral", "contradiction"])])
    dev_head = "\t".join(MNLI_HEAD + [f"label{i}" for i in range(1, 6)] + ["gold_label"])
    write(root / "MNLI/dev_matched.tsv", [dev_head, mnli_row(0, "Kip sat .", "Kip stood .", ["contradiction"] * 6)])
    write(root / "MNLI/dev_mismatched.tsv", [dev_head, mnli_row(0, "Lo hid .", "Lo was seen .", ["neutral"] * 6)])
    write(root / "MNLI/test_matched.tsv", ["\t".join(MNLI_HEAD), mnli_row(3, "Pim sang .", "Pim made a sound .", [])])
    write(root / "MNLI/test_mismatched.tsv", ["\t".join(MNLI_HEAD), mnli_row(4, "Tu fell .", "Tu rose .", [])])
    write(root / "MNLI/diagnostic.tsv", ["index\tsentence1\tsentence2", tsv(0, "No wug is blue .", "Some wug is blue .")])
    # QNLI / RTE / WNLI: index, two sentences, label (QNLI/RTE strings, WNLI 0/1 with 1 = entailment).
    for folder, labels in (("QNLI", ("entailment", "not_entailment")), ("RTE", ("not_entailment", "entailment")), ("WNLI", (1, 0))):
        head = "index\tquestion\tsentence" if folder == "QNLI" else "index\tsentence1\tsentence2"
        write(root / f"{folder}/train.tsv", [head + "\tlabel", tsv(0, "Who blinked ?", "Zan blinked .", labels[0]),
                                             tsv(1, "Who slept ?", "Mo ran .", labels[1])])
        write(root / f"{folder}/dev.tsv", [head + "\tlabel", tsv(0, "Dee ate .", "Dee is fed .", labels[0])])
        write(root / f"{folder}/test.tsv", [head, tsv(0, "Ro sat .", "Ro is up .")])
    return root


def examples(columns) -> list[tuple]:
    pair = [" ".join(w) for w in columns.words_b] if columns.words_b else [None] * len(columns)
    return list(zip(columns.idx, [" ".join(w) for w in columns.words_a], pair, columns.labels))


@pytest.fixture(scope="module")
def glue(tmp_path_factory) -> Path:
    return write_glue(tmp_path_factory.mktemp("data") / "glue_data")


def test_cola_no_header_label_col_2_sentence_col_4(glue):
    data = read_local(get_task("cola"), folder(glue, "cola"))
    assert examples(data["train"]) == [(0, "The blorp sang .", None, 1), (1, "Sang the the blorp .", None, 0)]
    assert examples(data["test"]) == [(0, "Dax slept .", None, -1), (1, "Slept dax .", None, -1)]


def test_sst2_keeps_na_null_and_quotes_as_text(glue):
    data = read_local(get_task("sst2"), folder(glue, "sst2"))
    assert examples(data["train"]) == [(0, "NA", None, 0), (1, 'a " wuzzy ride', None, 1), (2, "null and void - ish", None, 0)]


def test_mrpc_bom_and_positions(glue):
    data = read_local(get_task("mrpc"), folder(glue, "mrpc"))
    assert examples(data["train"])[0] == (0, "Zed bought fribs .", "Zed purchased fribs .", 1)
    assert examples(data["train"])[1][3] == 0
    assert examples(data["test"]) == [(7, "Vo ate .", "Vo dined .", -1)]


def test_stsb_scores_and_unlabeled_test(glue):
    data = read_local(get_task("stsb"), folder(glue, "stsb"))
    assert [row[3] for row in examples(data["train"])] == [4.25, 0.0]
    assert examples(data["train"])[0][1:3] == ("A zib hops .", "A zib jumps .")
    assert math.isnan(data["test"].labels[0])


def test_qqp_id_columns(glue):
    data = read_local(get_task("qqp"), folder(glue, "qqp"))
    assert examples(data["train"])[1] == (1, "What is a quib ?", "What ' s a quib ?", 1)
    assert examples(data["test"]) == [(0, "Can wugs run ?", "Do wugs run ?", -1)]


def test_mnli_all_files_gold_label_last_and_ax(glue):
    data = read_local(get_task("mnli"), folder(glue, "mnli"))
    assert set(data) == {"train", "validation_matched", "validation_mismatched", "test_matched", "test_mismatched", "ax"}
    names = get_task("mnli").label_names
    assert [names[row[3]] for row in examples(data["train"])] == ["entailment", "contradiction"]
    assert names[data["validation_matched"].labels[0]] == "contradiction"
    assert names[data["validation_mismatched"].labels[0]] == "neutral"
    assert examples(data["test_matched"]) == [(3, "Pim sang .", "Pim made a sound .", -1)]
    assert examples(data["test_mismatched"])[0][0] == 4
    assert examples(data["ax"]) == [(0, "No wug is blue .", "Some wug is blue .", -1)]


@pytest.mark.parametrize("name", ["qnli", "rte", "wnli"])
def test_two_class_label_strings(glue, name):
    task = get_task(name)
    data = read_local(task, folder(glue, name))
    got = [task.label_names[row[3]] for row in examples(data["train"])]
    expected = {"qnli": ["entailment", "not_entailment"], "rte": ["not_entailment", "entailment"],
                "wnli": ["entailment", "not_entailment"]}[name]
    assert got == expected
    assert examples(data["test"]) == [(0, "Ro sat .", "Ro is up .", -1)]


def test_a_task_reads_its_own_folder_only(tmp_path):
    write_glue(tmp_path / "glue_data")
    assert len(read_local(get_task("rte"), tmp_path / "glue_data" / "RTE")["train"]) == 2
    with pytest.raises(SpanftError, match=f"^{tmp_path / 'glue_data' / 'train.tsv'}: rte train file not found$"):
        read_local(get_task("rte"), tmp_path / "glue_data")  # no other place is looked at


# ------------------------------------------------------------------ SNLI


def snli_line(label: str, s1: str, s2: str) -> str:
    return json.dumps({"annotator_labels": [label], "captionID": "x", "gold_label": label, "pairID": "y",
                       "sentence1": s1, "sentence1_binary_parse": "", "sentence1_parse": "",
                       "sentence2": s2, "sentence2_binary_parse": "", "sentence2_parse": ""})


def test_snli_drops_dash_labels_and_counts_them(tmp_path, caplog):
    root = tmp_path / "snli_1.0"
    write(root / "snli_1.0_train.jsonl", [snli_line("neutral", "A gop waits.", "A gop waits for a bus."),
                                          snli_line("-", "A gop waits.", "Nobody."),
                                          snli_line("contradiction", "A gop waits.", "A gop sprints.")])
    write(root / "snli_1.0_dev.jsonl", [snli_line("entailment", "Two nibs sit.", "Nibs sit.")])
    write(root / "snli_1.0_test.jsonl", [snli_line("-", "X.", "Y."), snli_line("entailment", "Mo hums.", "Mo makes noise.")])
    with caplog.at_level(logging.INFO, logger="spanft"):
        data = read_local(get_task("snli"), root)
    assert examples(data["train"]) == [(0, "A gop waits .", "A gop waits for a bus .", 1), (2, "A gop waits .", "A gop sprints .", 2)]
    assert examples(data["test"]) == [(1, "Mo hums .", "Mo makes noise .", 0)]
    assert "dropped 1 example(s)" in caplog.text


def test_snli_bad_json_names_line(tmp_path):
    for name in ("dev", "test"):
        write(tmp_path / f"snli_1.0_{name}.jsonl", [snli_line("neutral", "A.", "B.")])
    write(tmp_path / "snli_1.0_train.jsonl", [snli_line("neutral", "A.", "B."), "{not json"])
    with pytest.raises(SpanftError, match=r"snli_1\.0_train\.jsonl:2: not valid JSON"):
        read_local(get_task("snli"), tmp_path)


# ------------------------------------------------------------------ CoNLL-2003


IOB1_TRAIN = ["-DOCSTART- -X- -X- O", "", "Zarn NNP B-NP I-PER", "Quell NNP I-NP I-PER", "visited VBD B-VP O",
              "Blorvia NNP B-NP I-LOC", ". . O O", "", "Veld NNP B-NP I-ORG", "Corp NNP I-NP I-ORG",
              "Trask NNP I-NP B-ORG", "won VBD B-VP O", ""]


def test_conll_iob1_files_are_rewritten_as_iob2(tmp_path, caplog):
    write(tmp_path / "eng.train", IOB1_TRAIN)
    write(tmp_path / "eng.testa", ["-DOCSTART- -X- -X- O", "", "Mip NNP B-NP I-MISC", "rose VBD B-VP O"])
    write(tmp_path / "eng.testb", ["Dov NNP B-NP I-PER"])
    task = get_task("conll2003")
    with caplog.at_level(logging.INFO, logger="spanft"):
        data = read_local(task, tmp_path)
    tags = [[task.label_names[t] for t in sentence] for sentence in data["train"].labels]
    assert data["train"].words_a == [["Zarn", "Quell", "visited", "Blorvia", "."], ["Veld", "Corp", "Trask", "won"]]
    assert tags == [["B-PER", "I-PER", "O", "B-LOC", "O"], ["B-ORG", "I-ORG", "B-ORG", "O"]]
    assert data["train"].idx == [0, 1]
    assert [task.label_names[t] for t in data["validation"].labels[0]] == ["B-MISC", "O"]
    assert "IOB1" in caplog.text


def test_conll_iob2_files_are_kept(tmp_path):
    lines = ["-DOCSTART- -X- -X- O", "", "Zarn NNP B-NP B-PER", "Quell NNP I-NP I-PER", "met VBD B-VP O",
             "Ulm NNP B-NP B-PER", "", ""]
    for name in ("train.txt", "valid.txt", "test.txt"):
        write(tmp_path / name, lines)
    task = get_task("conll2003")
    data = read_local(task, tmp_path)
    assert [[task.label_names[t] for t in s] for s in data["test"].labels] == [["B-PER", "I-PER", "O", "B-PER"]]


def test_to_iob2_matches_hand_conversion():
    assert to_iob2(["I-PER", "I-PER", "B-PER", "O", "I-LOC", "I-ORG", "I-ORG"]) == \
        ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "B-ORG", "I-ORG"]
    iob2 = ["B-PER", "I-PER", "B-PER", "O", "B-LOC"]
    assert to_iob2(iob2) == iob2


def test_conll_bad_tag_and_column_count(tmp_path):
    write(tmp_path / "eng.testa", ["Ulm NNP B-NP I-LOC"])
    write(tmp_path / "eng.testb", ["Ulm NNP B-NP I-LOC"])
    write(tmp_path / "eng.train", ["Zarn NNP B-NP I-PERSON"])
    with pytest.raises(SpanftError, match=r"eng\.train:1: NER tag 'I-PERSON'"):
        read_local(get_task("conll2003"), tmp_path)
    write(tmp_path / "eng.train", ["Zarn NNP B-NP I-PER", "visited VBD O"])
    with pytest.raises(SpanftError, match=r"eng\.train:2: expected 4 columns"):
        read_local(get_task("conll2003"), tmp_path)


# ------------------------------------------------------------------ bad input: one-line errors naming file:line


def test_wrong_field_count_names_file_and_line(tmp_path):
    write_glue(tmp_path)
    write(tmp_path / "RTE/train.tsv", ["index\tsentence1\tsentence2\tlabel", tsv(0, "A .", "B .", "entailment"), tsv(1, "C .", "entailment")])
    with pytest.raises(SpanftError, match=r"RTE/train\.tsv:3: expected 4 tab-separated fields, found 3"):
        read_local(get_task("rte"), folder(tmp_path, "rte"))


def test_label_outside_label_set(tmp_path):
    write_glue(tmp_path)
    write(tmp_path / "SST-2/train.tsv", ["sentence\tlabel", tsv("good", 1), tsv("bad", 2)])
    with pytest.raises(SpanftError, match=r"SST-2/train\.tsv:3: label '2' is not one of \['0', '1'\]"):
        read_local(get_task("sst2"), folder(tmp_path, "sst2"))
    write(tmp_path / "STS-B/train.tsv", ["index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore",
                                         tsv(0, "g", "f", "y", 0, "s", "s", "A .", "B .", "5.5")])
    with pytest.raises(SpanftError, match=r"STS-B/train\.tsv:2: score 5\.5 is outside \[0\.0, 5\.0\]"):
        read_local(get_task("stsb"), folder(tmp_path, "stsb"))


def test_empty_sentence_is_dropped_from_training_only_and_counted(tmp_path, caplog):
    write_glue(tmp_path)
    rows = [tsv("zq", 1, "", "Fine ."), tsv("zq", 0, "*", "   "), tsv("zq", 0, "*", "Ok .")]
    write(tmp_path / "CoLA/train.tsv", rows)
    write(tmp_path / "CoLA/dev.tsv", rows)
    with caplog.at_level(logging.INFO, logger="spanft"):
        data = read_local(get_task("cola"), folder(tmp_path, "cola"))
    assert examples(data["train"]) == [(0, "Fine .", None, 1), (2, "Ok .", None, 0)]
    assert examples(data["validation"]) == [(0, "Fine .", None, 1), (1, "", None, 0), (2, "Ok .", None, 0)]
    assert "dropped 1 training example(s) with an empty sentence: " in caplog.text and "CoLA/train.tsv:2" in caplog.text
    assert "kept 1 example(s) with an empty sentence (predicted like any other): " in caplog.text


def test_missing_train_or_validation_file_is_an_error(tmp_path):
    write_glue(tmp_path)
    (tmp_path / "WNLI/dev.tsv").unlink()
    with pytest.raises(SpanftError, match=r"WNLI/dev\.tsv: wnli validation file not found"):
        read_local(get_task("wnli"), folder(tmp_path, "wnli"))


def test_missing_test_file_skips_the_split_with_a_warning(tmp_path, caplog):
    write_glue(tmp_path)
    (tmp_path / "MNLI/diagnostic.tsv").unlink()
    with caplog.at_level(logging.WARNING, logger="spanft"):
        data = read_local(get_task("mnli"), folder(tmp_path, "mnli"))
    assert "ax" not in data and "test_matched" in data
    assert "no test predictions, no AX.tsv submission file" in caplog.text
    assert f"no file {tmp_path / 'MNLI' / 'diagnostic.tsv'} (the download's diagnostic/diagnostic.tsv" in caplog.text


def test_non_utf8_bytes_name_the_line(tmp_path):
    write_glue(tmp_path)
    (tmp_path / "SST-2/train.tsv").write_bytes(b"sentence\tlabel\nok\t1\nbad \xff\t0\n")
    with pytest.raises(SpanftError, match=r"SST-2/train\.tsv:3: not valid UTF-8"):
        read_local(get_task("sst2"), folder(tmp_path, "sst2"))


# ------------------------------------------------------------------ CLI: describe and prepare-task on local files


def test_describe_local_prints_one_json_object(glue, capsys):
    assert main(["describe", "mnli", "--source", "local", "--data-dir", str(glue.parent)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"task": "mnli", "labels": ["entailment", "neutral", "contradiction"],
                   "splits": {"train": 2, "validation_matched": 1, "validation_mismatched": 1,
                              "test_matched": 1, "test_mismatched": 1, "ax": 1}}
    assert main(["describe", "stsb", "--source", "local", "--data-dir", str(glue.parent)]) == 0
    assert json.loads(capsys.readouterr().out)["labels"] is None


def test_cli_errors_are_one_line_exit_2(tmp_path, capsys):
    assert main(["describe", "colaa"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "valid tasks: cola, sst2" in err
    assert main(["describe", "cola", "--source", "local", "--data-dir", str(tmp_path / "nowhere")]) == 2
    assert f"{tmp_path / 'nowhere' / 'glue_data' / 'CoLA'}: cola folder not found" in capsys.readouterr().err
    assert main(["describe", "cola", "--source", "local"]) == 2
    assert "--data-dir" in capsys.readouterr().err


def test_prepare_task_writes_the_prepared_schema(glue, tmp_path):
    out = tmp_path / "tasks" / "stsb"
    assert main(["prepare-task", "stsb", "--source", "local", "--data-dir", str(glue.parent), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".spanft-output", "provenance.json", "test.parquet",
                                                      "train.parquet", "validation.parquet"]
    table = pq.read_table(out / "train.parquet")
    assert str(table.schema.field("idx").type) == "int64"
    assert str(table.schema.field("words_a").type) == "list<element: string>"
    assert str(table.schema.field("words_b").type) == "list<element: string>"
    assert str(table.schema.field("label").type) == "double"
    assert table.column("words_b").to_pylist()[0] == ["A", "zib", "jumps", "."]


def test_prepared_tagging_and_single_schemas(glue, tmp_path):
    write(tmp_path / "conll" / "train.txt", ["Zarn NNP B-NP B-PER", "ran VBD B-VP O"])
    write(tmp_path / "conll" / "valid.txt", ["Ulm NNP B-NP B-LOC"])
    assert set(read_local(get_task("conll2003"), tmp_path / "conll")) == {"train", "validation"}  # test: absent
    write(tmp_path / "conll" / "test.txt", ["Ulm NNP B-NP B-LOC"])
    write_prepared(read_local(get_task("conll2003"), tmp_path / "conll"), tmp_path / "out_conll")
    table = pq.read_table(tmp_path / "out_conll" / "train.parquet")
    assert table.column_names == ["idx", "words_a", "tags"]
    assert str(table.schema.field("tags").type) == "list<element: int64>"
    assert table.column("tags").to_pylist() == [[1, 0]]
    write_prepared(read_local(get_task("cola"), folder(glue, "cola")), tmp_path / "out_cola")
    cola = pq.read_table(tmp_path / "out_cola" / "test.parquet")
    assert cola.column_names == ["idx", "words_a", "label"] and str(cola.schema.field("label").type) == "int64"


def test_every_task_has_local_files_in_the_fixture_layout(glue):
    for name, task in TASKS.items():
        if task.local_format == "glue_tsv":
            assert set(load_task(task, "local", folder(glue, name))) == set(task.all_splits), name
