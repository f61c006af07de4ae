"""Segmentation: the fast greedy segmenter against a direct loop, random spans, segment CLI, segment-task."""

from __future__ import annotations

import io
import json
import random
import sys
from itertools import product

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanft.cli import main
from spanft.errors import SpanftError
from spanft.text.dictionary import iter_entries
from spanft.text.segmentation import (
    GreedySegmenter,
    RandomSegmenter,
    _HashIndex,
    count_compositions,
    format_spans,
    random_composition,
    read_segmentation_info,
    segment_task_dir,
)


def greedy_reference(words, dictionary, max_n=5, lowercase=True):
    """The greedy rule written as plainly as possible: longest n-gram (max_n..2) from each position."""
    keys = [w.lower() for w in words] if lowercase else list(words)
    entries = {tuple(w.lower() for w in e) if lowercase else tuple(e) for e in dictionary}
    spans, i = [], 0
    while i < len(keys):
        take = 1
        for n in range(max_n, 1, -1):
            if i + n <= len(keys) and tuple(keys[i : i + n]) in entries:
                take = n
                break
        spans.append(take)
        i += take
    return spans


# ---- greedy: examples ---------------------------------------------------------------------------

def test_span_may_end_on_last_word():
    seg = GreedySegmenter([("new", "york"), ("york", "city")])
    assert seg.segment(["i", "love", "new", "york"]) == [1, 1, 2]
    assert seg.segment(["new", "york"]) == [2]


def test_whole_sentence_is_one_five_gram():
    seg = GreedySegmenter([tuple("abcde")])
    assert seg.segment(list("abcde")) == [5]
    assert seg.segment(list("abcd")) == [1, 1, 1, 1]


def test_longest_wins_and_greedy_is_not_optimal():
    seg = GreedySegmenter([("a", "b"), ("a", "b", "c"), ("c", "d", "e", "f")])
    # greedy takes "a b c" and cannot use "c d e f"
    assert seg.segment(list("abcdef")) == [3, 1, 1, 1]


def test_prefix_of_entry_is_not_a_match():
    seg = GreedySegmenter([("a", "b", "c")])  # "a b" is a trie node but not an entry
    assert seg.segment(list("abx")) == [1, 1, 1]


def test_matches_never_cross_sentence_boundaries():
    seg = GreedySegmenter([("x", "y")])
    assert seg.segment_batch([["a", "x"], ["y", "b"], ["x", "y"]]) == [[1, 1], [1, 1], [2]]


def test_lowercase_matching_and_keep_case():
    entries = [("new", "york")]
    assert GreedySegmenter(entries).segment(["New", "York"]) == [2]
    assert GreedySegmenter(entries, lowercase=False).segment(["New", "York"]) == [1, 1]
    assert GreedySegmenter([("New", "York")], lowercase=False).segment(["New", "York"]) == [2]


def test_empty_inputs_and_empty_dictionary():
    seg = GreedySegmenter([("a", "b")])
    assert seg.segment_batch([]) == []
    assert seg.segment_batch([[], ["a", "b"], []]) == [[], [2], []]
    assert GreedySegmenter([]).segment(["a", "b"]) == [1, 1]


def test_entries_outside_2_to_max_n_are_ignored():
    seg = GreedySegmenter([("a",), ("a", "b", "c"), ("a", "b")], max_n=2)
    assert seg.segment(list("abc")) == [2, 1]


def test_from_dictionary_file(tmp_path):
    path = tmp_path / "dict.txt"
    path.write_text("new york\t50\nof the\t40\n", encoding="utf-8")
    seg = GreedySegmenter.from_dictionary(path, max_n=5)
    assert seg.segment("in New York of the".split()) == [1, 2, 2]
    assert seg.describe()["dictionary_entries"] == 2


# ---- greedy: property test against the direct loop ----------------------------------------------

VOCAB = ["a", "b", "c", "d", "A", "B"]
word = st.sampled_from(VOCAB)
ngram = st.lists(word, min_size=1, max_size=6).map(tuple)


@settings(max_examples=300, deadline=None)
@given(dictionary=st.lists(ngram, max_size=25), sentences=st.lists(st.lists(word, max_size=14), max_size=8),
       max_n=st.integers(2, 5), lowercase=st.booleans())
def test_fast_segmenter_equals_direct_loop(dictionary, sentences, max_n, lowercase):
    # A vocabulary of 6 words makes overlapping candidates and sentence-final n-grams frequent.
    seg = GreedySegmenter(dictionary, max_n=max_n, lowercase=lowercase)
    expected = [greedy_reference(s, [e for e in dictionary if 2 <= len(e) <= max_n], max_n, lowercase)
                for s in sentences]
    assert seg.segment_batch(sentences) == expected
    flat = seg.segment_flat(sentences)
    assert flat.lengths.dtype == np.int32
    assert flat.counts().tolist() == [len(e) for e in expected]


# Words the encoder must read exactly: case and final-sigma pairs, long words sharing a prefix, a lone
# surrogate (arrow cannot hold it: the dict path), control characters, and the empty word.
ODD_WORDS = ["Σας", "ΣΑΣ", "σας", "İstanbul", "istanbul", "ß", "SS", "x" * 15, "x" * 16, "x" * 15 + "y",
             "ääääääääää", "Ääääääääää", "\ud800", "a\x1fb", "", "ǅ", "ǆ", "\u0130", "\u00df\u00df\u00df"]
odd_word = st.one_of(st.sampled_from(ODD_WORDS), st.text(max_size=20))
# arrow (parquet) strings are valid UTF-8: no lone surrogates
arrow_word = st.one_of(st.sampled_from([w for w in ODD_WORDS if w != "\ud800"]),
                       st.text(st.characters(blacklist_categories=("Cs",)), max_size=20))


@settings(max_examples=200, deadline=None)
@given(dictionary=st.lists(st.lists(odd_word, min_size=2, max_size=4).map(tuple), max_size=12),
       sentences=st.lists(st.lists(odd_word, max_size=10), max_size=6), lowercase=st.booleans(), data=st.data())
def test_any_word_is_read_exactly(dictionary, sentences, lowercase, data):
    """Arbitrary Unicode words: the segmenter equals the direct loop, whichever way it encodes a batch."""
    # plant dictionary n-grams in the sentences so that matches happen
    sentences = [s + list(data.draw(st.sampled_from(dictionary))) if dictionary and s else s for s in sentences]
    seg = GreedySegmenter(dictionary, lowercase=lowercase)
    assert seg.segment_batch(sentences) == [greedy_reference(s, dictionary, 5, lowercase) for s in sentences]


def test_lowercasing_the_joined_batch_equals_lowercasing_each_word():
    """Final sigma depends on the following character: the separator must stop it like a word end."""
    words = ["ΟΔΟΣ", "ΟΔΟΣΑ", "Σ", "ΑΣ", "'Σ", "Σ'", "İ", "ǅ", "x\u0345Σ", "ΑΣ\u0345"]
    dictionary = [(a, b) for a in words for b in words if a != b]
    seg = GreedySegmenter(dictionary)
    sentences = [[a, b] for a in words for b in words]
    assert seg.segment_batch(sentences) == [greedy_reference(s, dictionary) for s in sentences]


@pytest.mark.parametrize("lowercase", [True, False])
def test_arrow_lookup_and_dict_lookup_give_the_same_ids(lowercase):
    import pyarrow as pa

    words = [w for w in ODD_WORDS if w != "\ud800"]
    seg = GreedySegmenter([(a, b) for a in words for b in words[:5]], lowercase=lowercase)
    text = words + [w.upper() for w in words] + ["not-a-word"]
    fast = seg._ids_of_strings(pa.array(text, pa.string()))
    assert fast.tolist() == seg._encode_by_dict(text).tolist()
    assert (fast > 0).sum() > len(words)  # most of them are dictionary words


@settings(max_examples=150, deadline=None)
@given(dictionary=st.lists(st.lists(arrow_word, min_size=2, max_size=3).map(tuple), max_size=10),
       sentences=st.lists(st.lists(arrow_word, max_size=8), max_size=6), lowercase=st.booleans(),
       cut=st.integers(0, 3), data=st.data())
def test_arrow_column_gives_the_spans_of_the_lists(dictionary, sentences, lowercase, cut, data):
    """segment-task's path (arrow buffers, no Python word objects) equals the list path, sliced or chunked."""
    import pyarrow as pa

    sentences = [s + list(data.draw(st.sampled_from(dictionary))) if dictionary and s else s for s in sentences]
    seg = GreedySegmenter(dictionary, lowercase=lowercase)
    column = pa.array([["pad", "Pad"]] * cut + sentences, pa.list_(pa.string()))[cut:]  # a slice: offsets != 0
    got = seg.segment_arrow(column)
    assert got.type == pa.list_(pa.int32())
    assert got.to_pylist() == seg.segment_batch(sentences)
    chunked = pa.chunked_array([column[:2], column[2:]], pa.list_(pa.string()))
    assert seg.segment_arrow(chunked).to_pylist() == seg.segment_batch(sentences)


def test_dense_dictionary_all_sentences_of_small_alphabet():
    # every 2- and 3-gram over {a, b} except "b b": exhaustive check on all sentences up to 7 words
    dictionary = [g for n in (2, 3) for g in product("ab", repeat=n) if g[:2] != ("b", "b")]
    seg = GreedySegmenter(dictionary)
    sentences = [list(s) for n in range(8) for s in product("ab", repeat=n)]
    assert seg.segment_batch(sentences) == [greedy_reference(s, dictionary) for s in sentences]


def test_segmenter_is_stateless_across_batches():
    rng = random.Random(3)
    dictionary = [tuple(rng.choice("abcd") for _ in range(rng.randint(2, 5))) for _ in range(40)]
    sentences = [[rng.choice("abcdE") for _ in range(rng.randint(0, 30))] for _ in range(200)]
    seg = GreedySegmenter(dictionary)
    whole = seg.segment_batch(sentences)
    parts = seg.segment_batch(sentences[:77]) + seg.segment_batch(sentences[77:])
    assert whole == parts == [greedy_reference(s, dictionary) for s in sentences]


@settings(max_examples=50, deadline=None)
@given(keys=st.sets(st.integers(0, 2**40), max_size=300), queries=st.lists(st.integers(0, 2**40), max_size=50))
def test_hash_index_agrees_with_sorted_search(keys, queries):
    ordered = np.array(sorted(keys), dtype=np.int64)
    index = _HashIndex(ordered)
    probe = np.array(list(ordered) + queries, dtype=np.int64)
    rank = {k: i for i, k in enumerate(ordered.tolist())}
    assert index.find(probe).tolist() == [rank.get(q, -1) for q in probe.tolist()]


# ---- random segmentation ------------------------------------------------------------------------

def test_count_compositions_by_enumeration():
    for total in range(0, 9):
        for parts in range(0, 9):
            brute = sum(1 for c in product(range(1, 4), repeat=parts) if sum(c) == total)
            assert count_compositions(total, parts, 3) == brute


def test_random_composition_is_uniform():
    rng = random.Random(0)
    draws = [tuple(random_composition(7, 3, 4, rng)) for _ in range(6000)]
    support = {c for c in product(range(1, 5), repeat=3) if sum(c) == 7}
    assert set(draws) == support
    counts = np.array([draws.count(c) for c in sorted(support)])
    expected = len(draws) / len(support)
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < 30  # 11 degrees of freedom: p < 0.002 only if the sampler is biased


@settings(max_examples=100, deadline=None)
@given(dictionary=st.lists(ngram, max_size=25), sentences=st.lists(st.lists(word, max_size=20), max_size=8),
       seed=st.integers(0, 10))
def test_random_segmenter_properties(dictionary, sentences, seed):
    greedy = GreedySegmenter(dictionary)
    rand = RandomSegmenter(greedy, seed=seed)
    spans = rand.segment_batch(sentences)
    for words, lengths, reference in zip(sentences, spans, greedy.segment_batch(sentences)):
        assert sum(lengths) == len(words)
        assert len(lengths) == len(reference)
        assert all(1 <= n <= 5 for n in lengths)
    # deterministic, independent of batch boundaries and order
    assert RandomSegmenter(greedy, seed=seed).segment_batch(sentences) == spans
    assert [rand.segment(s) for s in sentences] == spans
    assert rand.segment_batch(sentences[::-1]) == spans[::-1]


def test_random_segmenter_depends_on_seed():
    greedy = GreedySegmenter([])
    sentence = [f"w{i}" for i in range(30)]
    greedy_two = GreedySegmenter([(f"w{i}", f"w{i+1}") for i in range(0, 30, 2)])
    draws = {tuple(RandomSegmenter(greedy_two, seed=s).segment(sentence)) for s in range(10)}
    assert len(draws) > 1
    assert RandomSegmenter(greedy, seed=1).segment(sentence) == [1] * 30


# ---- formatting and CLI -------------------------------------------------------------------------

def test_format_spans():
    assert format_spans(["a", "b", "c"], [2, 1]) == "a b | c"
    assert format_spans([], []) == ""


@pytest.fixture
def dict_file(tmp_path):
    path = tmp_path / "dict.txt"
    path.write_text("new york\t9\nnew york city\t5\nof the\t3\n", encoding="utf-8")
    return path


def test_cli_segment_file(tmp_path, dict_file, capsys):
    text = tmp_path / "in.txt"
    text.write_text("I love New York City.\n\nnone of the above\n", encoding="utf-8")
    assert main(["segment", "--dict", str(dict_file), str(text)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "I | love | New York City | .", "", "none | of the | above"]


def test_cli_segment_stdin_pretokenized(dict_file, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("new york,city of the\n".encode())))
    assert main(["segment", "--dict", str(dict_file), "--pretokenized"]) == 0
    assert capsys.readouterr().out == "new | york,city | of the\n"


def test_cli_segment_random_keeps_span_counts(tmp_path, dict_file, capsys):
    text = tmp_path / "in.txt"
    text.write_text("new york city is big of the\n", encoding="utf-8")
    assert main(["segment", "--dict", str(dict_file), "--method", "random", "--seed", "4", str(text)]) == 0
    line = capsys.readouterr().out.strip()
    assert len(line.split(" | ")) == 4 and line.replace(" | ", " ") == "new york city is big of the"


@pytest.mark.parametrize("setup, message", [
    (lambda p: None, "--dict is required"),
    (lambda p: (p / "d.txt").write_text("new york 9\n"), "d.txt:1: expected 'ngram<TAB>count'"),
    (lambda p: (p / "in.txt").write_bytes(b"ok\n\xff\n"), "in.txt:2: not valid UTF-8"),
])
def test_cli_segment_errors(tmp_path, dict_file, capsys, setup, message):
    setup(tmp_path)
    text = tmp_path / "in.txt"
    if not text.exists():
        text.write_text("new york\n")
    args = ["segment", str(text)]
    if message != "--dict is required":
        args += ["--dict", str(tmp_path / "d.txt") if (tmp_path / "d.txt").exists() else str(dict_file)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("spanft: error: ") and message in err and len(err.strip().splitlines()) == 1


def test_cli_segment_missing_stdin_bad_bytes(dict_file, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"fine\nbad \xc3\n")))
    assert main(["segment", "--dict", str(dict_file)]) == 2
    assert "<stdin>:2: not valid UTF-8" in capsys.readouterr().err


# ---- segment-task -------------------------------------------------------------------------------

def _write_pair_task(directory):
    directory.mkdir(parents=True)
    train = pd.DataFrame({
        "idx": np.array([0, 1, 2], dtype=np.int64),
        "words_a": [["New", "York", "City", "is", "big"], ["none", "of", "the"], []],
        "words_b": [["of", "the", "New", "York"], ["x"], ["New", "York"]],
        "label": np.array([1, 0, 2], dtype=np.int64),
    })
    test = pd.DataFrame({"idx": np.array([7], dtype=np.int64), "words_a": [["New", "York"]],
                         "words_b": [["of"]], "label": np.array([-1], dtype=np.int64)})
    train.to_parquet(directory / "train.parquet", index=False)
    test.to_parquet(directory / "test.parquet", index=False)
    return train, test


def test_segment_task_pair(tmp_path, dict_file):
    import pyarrow as pa
    import pyarrow.parquet as pq

    train, _ = _write_pair_task(tmp_path / "in")
    out = tmp_path / "out"
    assert main(["segment-task", str(tmp_path / "in"), "--out", str(out), "--dict", str(dict_file)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".spanft-output", "segmentation.json", "test.parquet", "train.parquet"]
    result = pd.read_parquet(out / "train.parquet")
    assert result["idx"].tolist() == [0, 1, 2] and result["label"].tolist() == [1, 0, 2]
    assert [list(w) for w in result["words_a"]] == [list(w) for w in train["words_a"]]  # case kept
    assert [list(s) for s in result["spans_a"]] == [[3, 1, 1], [1, 2], []]
    assert [list(s) for s in result["spans_b"]] == [[2, 2], [1], [2]]
    schema = pq.read_schema(out / "train.parquet")
    assert schema.field("spans_a").type == pa.list_(pa.int32())
    assert read_segmentation_info(out / "test.parquet")["method"] == "ngram"
    info = json.loads((out / "segmentation.json").read_text())
    assert info["splits"]["train"]["mean_spans_a"] == pytest.approx(5 / 3)
    assert info["splits"]["test"]["rows"] == 1


def test_segment_task_single_sentence_random(tmp_path, dict_file):
    src = tmp_path / "in"
    src.mkdir()
    pd.DataFrame({"idx": np.arange(2, dtype=np.int64), "words_a": [["New", "York", "City", "x"], ["a"]],
                  "label": np.array([0, 1])}).to_parquet(src / "validation.parquet", index=False)
    out = tmp_path / "out"
    segment_task_dir(src, out, RandomSegmenter(GreedySegmenter.from_dictionary(dict_file, max_n=5), seed=2))
    result = pd.read_parquet(out / "validation.parquet")
    assert "spans_b" not in result.columns
    spans = [list(s) for s in result["spans_a"]]
    assert [sum(s) for s in spans] == [4, 1] and [len(s) for s in spans] == [2, 1]
    assert read_segmentation_info(out / "validation.parquet")["seed"] == 2


def test_segment_task_errors_leave_no_output(tmp_path, dict_file, capsys):
    out = tmp_path / "out"
    assert main(["segment-task", str(tmp_path / "missing"), "--out", str(out), "--dict", str(dict_file)]) == 2
    assert "prepared task directory not found" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["segment-task", str(tmp_path / "empty"), "--out", str(out), "--dict", str(dict_file)]) == 2
    assert "no <split>.parquet files" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    pd.DataFrame({"idx": [0], "words_a": [["a"]]}).to_parquet(bad / "train.parquet")
    (bad / "validation.parquet").write_bytes(b"not parquet")
    assert main(["segment-task", str(bad), "--out", str(out), "--dict", str(dict_file)]) == 2
    assert "validation.parquet: cannot read parquet" in capsys.readouterr().err
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_make_segmenter_rejects_unknown_method():
    from spanft.text.segmentation import make_segmenter

    with pytest.raises(SpanftError, match="unknown segmentation method"):
        make_segmenter("bpe", max_n=5)


# ---- the whole-file dictionary reader against the line-by-line one ----------------------------------

_WORD = st.text(alphabet="aAbBßİéΣς-'", min_size=1, max_size=3)
_LINE = st.tuples(st.lists(_WORD, min_size=1, max_size=7), st.integers(0, 99)).map(
    lambda e: f"{' '.join(e[0])}\t{e[1]}")


def _same_segmenter(fast: GreedySegmenter, slow: GreedySegmenter) -> None:
    assert (fast.num_entries, fast._vocab) == (slow.num_entries, slow._vocab)
    assert np.array_equal(fast._level1, slow._level1)
    for k in range(2, slow.max_n + 1):
        assert np.array_equal(fast._index[k]._index.values, slow._index[k]._index.values)
        assert np.array_equal(fast._terminal[k], slow._terminal[k])


@settings(max_examples=120, deadline=None)
@given(lines=st.lists(_LINE, max_size=40), max_n=st.integers(2, 6), lowercase=st.booleans(),
       sentences=st.lists(st.lists(_WORD, max_size=12), max_size=6))
def test_whole_file_dictionary_reader_builds_the_line_reader_segmenter(tmp_path_factory, lines, max_n, lowercase,
                                                                      sentences):
    path = tmp_path_factory.mktemp("dict") / "d.tsv"
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    fast = GreedySegmenter.from_dictionary(path, max_n=max_n, lowercase=lowercase)
    slow = GreedySegmenter((w for w, _ in iter_entries(path)), max_n=max_n, lowercase=lowercase)
    _same_segmenter(fast, slow)
    assert fast.segment_batch(sentences) == slow.segment_batch(sentences)


@pytest.mark.parametrize("bad", ["a b\t1\nc  d\t2\n", "a b\t1\nc d\n", "a b\t1\n\t3\n", "a b\t-1\n", "a b\tx\n",
                                 "a b\t1\n c\t2\n", "a b\t1\nc d\t\xff\n"])
def test_a_malformed_dictionary_is_judged_line_by_line(tmp_path, bad):
    path = tmp_path / "d.tsv"
    path.write_bytes(bad.encode("utf-8").replace(b"\xc3\xbf", b"\xff"))
    with pytest.raises(SpanftError) as fast:
        GreedySegmenter.from_dictionary(path, max_n=5)
    with pytest.raises(SpanftError) as slow:
        list(iter_entries(path))
    assert str(fast.value) == str(slow.value)


def test_bom_and_crlf_dictionaries_read_alike(tmp_path):
    plain, odd = tmp_path / "plain.tsv", tmp_path / "odd.tsv"
    plain.write_text("new york\t5\nthe city of\t3\n", encoding="utf-8")
    odd.write_bytes(b"\xef\xbb\xbfnew york\t5\r\nthe city of\t3\r\n")
    _same_segmenter(GreedySegmenter.from_dictionary(odd, max_n=5), GreedySegmenter.from_dictionary(plain, max_n=5))
