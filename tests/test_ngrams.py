"""N-gram counting against a collections.Counter oracle built straight from the definition."""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers.pre_tokenizers import BertPreTokenizer

from spanft.cli import main
from spanft.errors import SpanftError
from spanft.text.ngrams import (
    _group_keys,
    count_ngrams,
    encode_corpus,
    write_counts,
)
from spanft.text.words import WordTokenizer

# words, case variants of them, and tokens without a letter or digit (barriers)
_WORDS = ["a", "b", "c", "the", "of", "A", "The", "x1", "1998", "é", "É"]
_PUNCT = [",", ".", "--", "@-@", "(", "'"]


def oracle(lines: list[list[str]], min_n: int, max_n: int, min_count: int, lowercase: bool) -> list[tuple[str, int]]:
    """Count from the definition: every window of n tokens inside one line, all tokens alphanumeric-bearing."""
    counter: Counter[tuple[str, ...]] = Counter()
    for tokens in lines:
        tokens = [t.lower() for t in tokens] if lowercase else tokens
        for n in range(min_n, max_n + 1):
            for i in range(len(tokens) - n + 1):
                window = tuple(tokens[i : i + n])
                if all(any(ch.isalnum() for ch in t) for t in window):
                    counter[window] += 1
    kept = [(" ".join(gram), count) for gram, count in counter.items() if count >= min_count]
    return sorted(kept, key=lambda entry: (-entry[1], entry[0]))


def as_pairs(counts) -> list[tuple[str, int]]:
    return list(zip(counts.texts, counts.counts.tolist()))


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


token_lines = st.lists(st.lists(st.sampled_from(_WORDS + _PUNCT), max_size=25), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=token_lines,
    orders=st.sampled_from([(2, 5), (1, 3), (2, 2), (3, 6), (1, 1)]),
    min_count=st.sampled_from([1, 2, 3, 5]),
    keep_case=st.booleans(),
)
def test_counts_equal_counter_oracle(tmp_path, lines, orders, min_count, keep_case):
    min_n, max_n = orders
    path = write_lines(tmp_path / "corpus.txt", [" ".join(tokens) for tokens in lines])
    if not any(any(ch.isalnum() for ch in t) for tokens in lines for t in tokens):
        with pytest.raises(SpanftError, match="empty corpus"):
            count_ngrams([path], min_n, max_n, min_count, pretokenized=True, lowercase=not keep_case, progress=False)
        return
    counts = count_ngrams([path], min_n, max_n, min_count, pretokenized=True, lowercase=not keep_case, progress=False)
    assert as_pairs(counts) == oracle(lines, min_n, max_n, min_count, lowercase=not keep_case)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=st.lists(st.text(alphabet="ab c.,'-\tÉé!1\u3000", max_size=30), min_size=1, max_size=20),
    min_count=st.sampled_from([1, 2]),
)
def test_default_mode_uses_bert_words(tmp_path, texts, min_count):
    texts = [t.replace("\n", " ") for t in texts]
    path = write_lines(tmp_path / "corpus.txt", texts)
    bert = BertPreTokenizer()
    lines = [[w for w, _ in bert.pre_tokenize_str(t.lower())] for t in texts]
    expected = oracle(lines, 2, 4, min_count, lowercase=False)
    try:
        counts = count_ngrams([path], 2, 4, min_count, progress=False)
    except SpanftError as exc:
        assert "empty corpus" in str(exc)
        assert not any(any(ch.isalnum() for ch in w) for ws in lines for w in ws)
        return
    assert as_pairs(counts) == expected


def test_pool_and_chunk_boundaries_match_single_process(tmp_path):
    rng = np.random.default_rng(3)
    vocab = np.array(_WORDS + _PUNCT)
    lines = [" ".join(rng.choice(vocab, size=rng.integers(0, 30))) for _ in range(400)]
    one = write_lines(tmp_path / "one.txt", lines[:250])
    two = write_lines(tmp_path / "two.txt", lines[250:])
    tokenizer = WordTokenizer(pretokenized=True)
    single = encode_corpus([one, two], tokenizer, workers=1, progress=False)
    pooled = encode_corpus([one, two], tokenizer, workers=2, chunk_bytes=97, progress=False)
    assert single.vocab == pooled.vocab
    np.testing.assert_array_equal(single.ids, pooled.ids)
    assert single.lines == pooled.lines == 400
    # files are separate: the last word of one.txt and the first of two.txt never form an n-gram
    expected = oracle([line.split() for line in lines], 2, 5, 2, lowercase=True)
    assert as_pairs(count_ngrams([one, two], min_count=2, workers=2, progress=False)) == expected


def test_never_across_lines_and_ties_by_text(tmp_path):
    path = write_lines(tmp_path / "c.txt", ["b a", "a b", "a c , b", "c b"])
    counts = count_ngrams([path], 2, 3, 1, progress=False)
    # every bigram once: ties in code-point order; "a c , b" holds no n-gram across the comma
    assert as_pairs(counts) == [("a b", 1), ("a c", 1), ("b a", 1), ("c b", 1)]


def test_canonical_order_in_written_file(tmp_path):
    path = write_lines(tmp_path / "c.txt", ["z y", "z y", "b c", "b c", "a b c", "Z Y"])
    out = tmp_path / "counts.txt"
    write_counts(count_ngrams([path], 2, 3, 1, progress=False), out)
    assert out.read_text(encoding="utf-8") == "b c\t3\nz y\t3\na b\t1\na b c\t1\n"


def test_bom_and_crlf(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes("\ufeffa b\r\na b\r\n".encode("utf-8"))
    assert as_pairs(count_ngrams([path], 2, 2, 2, progress=False)) == [("a b", 2)]


@pytest.mark.parametrize("force_argsort", [False, True])
def test_group_keys_against_numpy_unique(force_argsort):
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 50, size=5000).astype(np.int64)
    if force_argsort:
        keys = keys * (1 << 50)  # too wide to pack the position beside the key
    distinct, counts, ids = _group_keys(keys.copy(), min_count=100, want_ids=True)
    uniq, inverse, uniq_counts = np.unique(keys, return_inverse=True, return_counts=True)
    survive = uniq_counts >= 100
    np.testing.assert_array_equal(distinct, uniq[survive])
    np.testing.assert_array_equal(counts, uniq_counts[survive])
    dense = np.where(survive, np.cumsum(survive) - 1, -1)
    np.testing.assert_array_equal(ids, dense[inverse])


def test_reference_counter_agrees(tmp_path):
    """benchmarks/bench_count.py's Counter reference (what the benchmark compares against) counts alike."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_count", Path(__file__).parents[1] / "benchmarks" / "bench_count.py")
    bench_count = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_count)
    count_ngrams_reference = bench_count.count_ngrams_reference
    lines = ["The cat sat on the mat .", "the cat , the cat sat", "on the mat on the mat"]
    path = write_lines(tmp_path / "c.txt", lines)
    fast = as_pairs(count_ngrams([path], 2, 4, 2, progress=False))
    assert fast == count_ngrams_reference(lines, WordTokenizer(), 2, 4, 2)
    assert ("the cat", 3) in fast and ("on the mat", 3) in fast


# ---- errors, through the CLI ----------------------------------------------------------------


def run_cli(*argv: str) -> int:
    return main(["-q", *argv])


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_cli_end_to_end(tmp_path):
    corpus = write_lines(tmp_path / "c.txt", ["New York is big .", "new york , new york"])
    out = tmp_path / "out" / "counts.txt"
    assert run_cli("count-ngrams", str(corpus), "--out", str(out), "--min-count", "2", "--max-n", "3") == 0
    assert out.read_text(encoding="utf-8") == "new york\t3\n"
    assert run_cli("count-ngrams", str(corpus), "--out", str(out), "--min-count", "1", "--keep-case", "--max-n", "2") == 0
    assert out.read_text(encoding="utf-8").splitlines()[:2] == ["new york\t2", "New York\t1"]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty corpus"),
        (b". , ;\n--\n", "empty corpus"),
        (b"a b\nc d\n\xff e\n", "c.txt:3: not valid UTF-8 (byte 0xff at column 1)"),
    ],
)
def test_cli_bad_corpus(tmp_path, capsys, content, message):
    corpus = tmp_path / "c.txt"
    corpus.write_bytes(content)
    out = tmp_path / "counts.txt"
    assert run_cli("count-ngrams", str(corpus), "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists() and leftovers(tmp_path) == []


def test_bad_utf8_line_number_in_a_later_chunk(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_bytes(b"a b\n" * 50 + b"ok \xc3\x28\n" + b"a b\n")
    tokenizer = WordTokenizer()
    with pytest.raises(SpanftError, match=r"c\.txt:51: not valid UTF-8 \(byte 0xc3 at column 4\)"):
        encode_corpus([corpus], tokenizer, workers=2, chunk_bytes=16, progress=False)


def test_cli_missing_file_and_bad_orders(tmp_path, capsys):
    out = tmp_path / "counts.txt"
    assert run_cli("count-ngrams", str(tmp_path / "nope.txt"), "--out", str(out)) == 2
    assert "nope.txt: corpus file not found" in capsys.readouterr().err
    corpus = write_lines(tmp_path / "c.txt", ["a b"])
    assert run_cli("count-ngrams", str(corpus), "--out", str(out), "--min-n", "3", "--max-n", "2") == 2
    assert "found min_n 3, max_n 2" in capsys.readouterr().err  # the bounds of params ngrams.*
    assert run_cli("count-ngrams", str(corpus), "--out", str(out), "--min-count", "0") == 2
    assert not out.exists() and leftovers(tmp_path) == []


def test_nothing_frequent_enough_warns_and_writes_empty_file(tmp_path, caplog):
    corpus = write_lines(tmp_path / "c.txt", ["a b c"])
    out = tmp_path / "counts.txt"
    with caplog.at_level(logging.WARNING, logger="spanft"):
        assert main(["count-ngrams", str(corpus), "--out", str(out)]) == 0
    assert out.read_text() == "" and "no n-gram reached --min-count 10" in caplog.text
