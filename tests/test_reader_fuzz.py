"""Every reader fed random bytes and random rows: it reads them, or stops with the project's one-line error.

Readers: GLUE TSV (every task), SNLI JSONL, CoNLL-2003 columns, WikiText, counts/dictionary files, tagged
sentences and tagger files, params files (the loader and the check), and the segmenter's dictionary. Any
other exception (KeyError, TypeError, UnicodeDecodeError, ...) or a message of more than one line fails.
"""

from __future__ import annotations

import copy
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spanft.data.corpus import write_local_corpus
from spanft.data.local_readers import read_local
from spanft.data.registry import TASKS, get_task
from spanft.errors import SpanftError
from spanft.params.load import load_params
from spanft.params.schema import check_params, check_params_file
from spanft.text.chunker import load_tagger, read_tagged_sentences
from spanft.text.dictionary import build_dictionary
from spanft.text.greedy import GreedySegmenter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_local_layouts import folder, write_glue  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
GLUE_TASKS = [name for name, task in TASKS.items() if task.local_format == "glue_tsv"]


def one_line_or_nothing(call: Callable[[], object]) -> None:
    """Run ``call``; only a SpanftError of exactly one line may escape."""
    try:
        call()
    except SpanftError as exc:
        message = str(exc)
        assert message and len(message.splitlines()) == 1 and "\n" not in message, repr(message)


@pytest.fixture(scope="module")
def glue(tmp_path_factory) -> Path:
    return write_glue(tmp_path_factory.mktemp("glue"))


# fields that reach deep into the row checks: labels, indexes, numbers, odd text, header names
FIELDS = st.one_of(
    st.sampled_from(["0", "1", "2", "-1", "entailment", "not_entailment", "neutral", "contradiction", "4.5", "5.01",
                     "nan", "inf", "", " ", "x y", "index", "sentence", "label", "é", "\x0c", "\u2028", '"', "NaN",
                     " 7 ", "\uff11", "-", "gold_label", "#1 String"]),
    st.text(max_size=6),
)
ROWS = st.lists(st.lists(FIELDS, max_size=12).map("\t".join), max_size=8)
RAW = st.binary(max_size=300)


def _write_rows(path: Path, header: str | None, rows: list[str], bom: bool) -> None:
    lines = ([header] if header is not None else []) + rows
    path.write_bytes(("\ufeff" if bom else "").encode() + "".join(line + "\n" for line in lines).encode())


def _mutated(lines: list[str], data) -> list[str]:
    """The official file with one to three fields replaced (labels, indexes, scores, sentences, headers)."""
    lines = list(lines)
    for _ in range(data.draw(st.integers(1, 3))):
        row = data.draw(st.integers(0, len(lines) - 1))
        fields = lines[row].split("\t")
        fields[data.draw(st.integers(0, len(fields) - 1))] = data.draw(FIELDS)
        lines[row] = "\t".join(fields)
    return lines


@FUZZ
@given(task=st.sampled_from(GLUE_TASKS), data=st.data())
def test_glue_tsv_reader(glue, task, data):
    spec = get_task(task)
    split = spec.splits[data.draw(st.sampled_from(list(spec.splits)))]
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(folder(glue, task), tmp, dirs_exist_ok=True)
        target = Path(tmp) / split.local_names[0]
        lines = target.read_text(encoding="utf-8").split("\n")[:-1]
        how = data.draw(st.sampled_from(["bytes", "rows", "mutate", "mutate"]))
        if how == "bytes":
            target.write_bytes(data.draw(RAW))
        elif how == "rows":
            header = data.draw(st.sampled_from([lines[0], None, "sentence\tlabel", "index\tsentence1\tsentence2"]))
            _write_rows(target, header, data.draw(ROWS), data.draw(st.booleans()))
        else:
            _write_rows(target, None, _mutated(lines, data), data.draw(st.booleans()))
        one_line_or_nothing(lambda: read_local(spec, tmp))


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                           max_leaves=8)
SNLI_RECORDS = st.fixed_dictionaries(
    {},
    optional={"gold_label": st.sampled_from(["neutral", "entailment", "contradiction", "-", "", "x"]) | JSON_VALUES,
              "sentence1": st.text(max_size=12) | JSON_VALUES, "sentence2": st.text(max_size=12) | JSON_VALUES},
)
SNLI_GOOD = st.fixed_dictionaries({"gold_label": st.sampled_from(["neutral", "entailment", "contradiction", "-"]),
                                   "sentence1": st.text(max_size=12), "sentence2": st.text(max_size=12)})
SNLI_LINES = st.lists(st.one_of(SNLI_GOOD.map(json.dumps), SNLI_GOOD.map(json.dumps), SNLI_RECORDS.map(json.dumps),
                                JSON_VALUES.map(json.dumps), st.text(max_size=20)), max_size=6)


@FUZZ
@given(data=st.data())
def test_snli_jsonl_reader(data):
    ok = '{"gold_label": "neutral", "sentence1": "A vop sat .", "sentence2": "A vop rested ."}\n'
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("train", "dev", "test"):
            (Path(tmp) / f"snli_1.0_{name}.jsonl").write_text(ok, encoding="utf-8")
        target = Path(tmp) / f"snli_1.0_{data.draw(st.sampled_from(['train', 'dev', 'test']))}.jsonl"
        how = data.draw(st.sampled_from(["bytes", "mixed", "records"]))
        if how == "bytes":
            target.write_bytes(data.draw(RAW))
        else:
            lines = data.draw(SNLI_LINES if how == "mixed" else st.lists(SNLI_GOOD.map(json.dumps), max_size=6))
            target.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        one_line_or_nothing(lambda: read_local(get_task("snli"), tmp))


CONLL_TOKENS = st.sampled_from(["Zed", "NNP", "B-NP", "B-PER", "I-PER", "O", "-DOCSTART-", "B-XYZ", "I-LOC", "-X-",
                                "\u2028", "é"]) | st.text(max_size=4)
CONLL_LINES = st.lists(st.lists(CONLL_TOKENS, max_size=5).map(" ".join), max_size=12)


@FUZZ
@given(data=st.data())
def test_conll_reader(data):
    ok = "-DOCSTART- -X- -X- O\n\nZed NNP B-NP B-PER\nran VBD B-VP O\n\n"
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("train.txt", "valid.txt", "test.txt"):
            (Path(tmp) / name).write_text(ok, encoding="utf-8")
        target = Path(tmp) / data.draw(st.sampled_from(["train.txt", "valid.txt", "test.txt"]))
        if data.draw(st.booleans()):
            target.write_bytes(data.draw(RAW))
        else:
            target.write_text("".join(line + "\n" for line in data.draw(CONLL_LINES)), encoding="utf-8")
        one_line_or_nothing(lambda: read_local(get_task("conll2003"), tmp))


TEXT_LINES = st.lists(st.text(max_size=20) | st.sampled_from([" = Title = ", "", " = = Sub = = ", "\x0c"]), max_size=8)


def _text_file(data, path: Path) -> Path:
    if data.draw(st.booleans()):
        path.write_bytes(data.draw(RAW))
    else:
        path.write_text("".join(line + "\n" for line in data.draw(TEXT_LINES)), encoding="utf-8", errors="surrogatepass")
    return path


@FUZZ
@given(data=st.data())
def test_wikitext_reader(data):
    with tempfile.TemporaryDirectory() as tmp:
        source = _text_file(data, Path(tmp) / "wiki.train.tokens")
        one_line_or_nothing(lambda: write_local_corpus(source, Path(tmp) / "corpus.txt"))


COUNT_ROWS = st.lists(st.tuples(st.lists(st.sampled_from(["a", "b", "the cat", "é", "", " "]) | st.text(max_size=4),
                                         max_size=4).map(" ".join),
                                st.sampled_from(["5", "4", "-1", "x", "", "3.5", "10"]) | st.text(max_size=3))
                      .map(lambda row: "\t".join(row)), max_size=8)


@FUZZ
@given(data=st.data(), size=st.integers(min_value=-1, max_value=6))
def test_counts_and_dictionary_readers(data, size):
    with tempfile.TemporaryDirectory() as tmp:
        counts = Path(tmp) / "counts.tsv"
        if data.draw(st.booleans()):
            counts.write_bytes(data.draw(RAW))
        else:
            counts.write_text("".join(row + "\n" for row in data.draw(COUNT_ROWS)), encoding="utf-8")
        one_line_or_nothing(lambda: build_dictionary(counts, size, Path(tmp) / "dict.tsv"))
        one_line_or_nothing(lambda: GreedySegmenter.from_dictionary(counts, max_n=5))


@FUZZ
@given(data=st.data())
def test_tagged_sentences_and_tagger_files(data):
    with tempfile.TemporaryDirectory() as tmp:
        tagged = _text_file(data, Path(tmp) / "tagged.tsv")
        one_line_or_nothing(lambda: read_tagged_sentences(tagged))
        tagger = Path(tmp) / "tagger.json"
        tagger.write_text(json.dumps(data.draw(JSON_VALUES)), encoding="utf-8")
        one_line_or_nothing(lambda: load_tagger(tagger))


# ----------------------------------------------------------------------------------------------- params

YAML_SNIPPETS = st.sampled_from(["profile: embedded\n", "dict_size: 3e-05\n", "a: [1\n", "a: {b: 1, b: 2}\n",
                                 "- 1\n- 2\n", "!!python/name:os.system\n", "&a [*a]\n", "a: *b\n", "? [1]\n: 2\n",
                                 "\t x: 1\n", "%YAML 1.1\n---\na: 1\n", "a: !!binary '@@'\n", "<<: 1\n"])


@FUZZ
@given(data=st.data())
def test_params_files(data):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "params.yaml"
        choice = data.draw(st.integers(0, 2))
        if choice == 0:
            path.write_bytes(data.draw(RAW))
        elif choice == 1:
            path.write_text("".join(data.draw(st.lists(YAML_SNIPPETS, max_size=4))), encoding="utf-8")
        else:
            text = (ROOT / "profiles" / "embedded.yaml").read_text(encoding="utf-8")
            cut = data.draw(st.integers(0, len(text)))
            path.write_text(text[:cut] + data.draw(st.text(max_size=10)) + text[cut:], encoding="utf-8",
                            errors="surrogatepass")
        one_line_or_nothing(lambda: check_params_file(path))


def _paths(node, prefix=()):
    """Every key path of a params tree (lists included as leaves)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield prefix + (key,)
            yield from _paths(value, prefix + (key,))


PARAMS = load_params(ROOT / "profiles" / "embedded.yaml")
PARAM_PATHS = sorted(_paths(PARAMS), key=str)
PARAM_VALUES = st.one_of(JSON_VALUES, st.integers(-3, 3), st.sampled_from(
    ["tiny", "cola", "local", "hub", "build", "../x", "a/b", "x; rm -rf ~", "$(id)", "main", "..", 1e-5, 0.5, 1.0,
     [1, 1], ["tiny"], ["cola", "cola"], {"source": "hub", "hub_id": "a/b"}, {"source": "local"}]))


@pytest.mark.parametrize("breaker", ["\x85", "\u2028", "\n", "\r", "\x1b[31m"])
def test_a_key_holding_a_line_break_is_named_on_one_line(breaker):
    """Python's splitlines breaks at U+0085 and U+2028 too: a key quoted in the message is shown escaped."""
    for parent in (("backbones", "build", "tiny"), ("backbones", "build")):
        tree = copy.deepcopy(PARAMS)
        node = tree
        for key in parent[:-1]:
            node = node[key]
        node[parent[-1]] = {**node[parent[-1]], breaker: None} if parent[-1] == "tiny" else {breaker: None}
        with pytest.raises(SpanftError) as raised:
            check_params(tree, "params.yaml")
        assert len(str(raised.value).splitlines()) == 1 and ascii(breaker)[1:-1] in str(raised.value)


@FUZZ
@given(path=st.sampled_from(PARAM_PATHS), value=PARAM_VALUES, delete=st.booleans())
def test_check_params_on_changed_trees(path, value, delete):
    tree = copy.deepcopy(PARAMS)
    node = tree
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    one_line_or_nothing(lambda: check_params(tree, "params.yaml"))
