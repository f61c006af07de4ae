"""Greedy n-gram segmentation: the fast segmenter against a direct loop, and the whole-file dictionary reader."""

from __future__ import annotations

import random
from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spanft.errors import SpanftError
from spanft.text.dictionary import iter_entries
from spanft.text.greedy import GreedySegmenter, _HashIndex


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
