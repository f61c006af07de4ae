"""Features: word spans onto sub-tokens, limits, labels, padding; checked against a slow per-word oracle."""

from __future__ import annotations

import json
import logging
import random
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import BertTokenizer, RobertaTokenizer

from spanft.data.registry import get_task
from spanft.errors import SpanftError
from spanft.model.features import (
    IGNORE_INDEX,
    FeatureConfig,
    SpanCollator,
    TruncationStats,
    encode_split,
)

# Words for the generated training text and the test sentences: multi-piece words, punctuation inside a
# word (one word, several pre-tokens), accents, and words that map to zero sub-tokens ("", zero-width space).
BASE_WORDS = [
    "the", "cat", "sat", "on", "a", "mat", "running", "quickly", "unbelievable", "New", "York", "said",
    "Zürich", "U.S.", "don't", "ice-cream", "42", "tokenization", "xylophone", "and", "of", ",", ".",
]
ZERO_TOKEN_WORDS = ["", "\u200b"]
TEST_WORDS = BASE_WORDS + ZERO_TOKEN_WORDS + ["qqqzzz", "Ångström"]


def _training_text(n_lines: int = 300, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(BASE_WORDS) for _ in range(12)) for _ in range(n_lines)]


@pytest.fixture(scope="module")
def wordpiece() -> BertTokenizer:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(_training_text(), trainers.WordPieceTrainer(vocab_size=80, special_tokens=specials))
    return BertTokenizer(vocab=tok.get_vocab())


def _byte_level_bpe(add_prefix_space: bool) -> RobertaTokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=320, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(_training_text(), trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    return RobertaTokenizer(vocab=model["vocab"], merges=merges, add_prefix_space=add_prefix_space)


@pytest.fixture(scope="module")
def bpe() -> RobertaTokenizer:
    return _byte_level_bpe(add_prefix_space=True)


# ---------------------------------------------------------------------------------------------------------
# The oracle: tokenize word by word, lay out the sequence by hand, walk the spans in a plain loop.


def _word_pieces(tokenizer, word: str) -> list[int]:
    return tokenizer([word], is_split_into_words=True, add_special_tokens=False)["input_ids"]


def _specials(tokenizer, pair: bool) -> tuple[list[int], list[int], list[int]]:
    """(before a, between a and b, after the last sentence)."""
    if isinstance(tokenizer, RobertaTokenizer):
        bos, eos = tokenizer.convert_tokens_to_ids(["<s>", "</s>"])
        return [bos], ([eos, eos] if pair else []), [eos]
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    return [cls], ([sep] if pair else []), [sep]


def _truncate(a: list, b: list | None, budget: int) -> tuple[list, list | None]:
    """Longest-first as ``tokenizers`` documents it: the shorter sentence keeps its length if the longer one
    alone can absorb the cut; else each keeps budget // 2 pieces and the odd piece goes to the longer one
    (the second on ties). Pieces are cut from the end."""
    if b is None:
        return a[:budget], None
    if len(a) + len(b) <= budget:
        return a, b
    n_short, n_long = sorted((len(a), len(b)))
    n_long = n_short if n_short > budget else max(n_short, budget - n_short)
    if n_short + n_long > budget:
        n_short, n_long = budget // 2, budget // 2 + budget % 2
    n_a, n_b = (n_long, n_short) if len(a) > len(b) else (n_short, n_long)
    return a[:n_a], b[:n_b]


def oracle_example(tokenizer, cfg: FeatureConfig, words_a, spans_a, words_b=None, spans_b=None, tags=None):
    pair = words_b is not None
    before, between, after = _specials(tokenizer, pair)
    sentences = [(words_a, spans_a)] + ([(words_b, spans_b)] if pair else [])
    # every piece as (sentence, word index, span index, piece id)
    pieces = []
    for words, spans in sentences:
        span_of_word = [s for s, length in enumerate(spans) for _ in range(length)]
        pieces.append([(w, span_of_word[w], p) for w, word in enumerate(words) for p in _word_pieces(tokenizer, word)])
    budget = cfg.max_seq_len - len(before) - len(between) - len(after)
    kept_a, kept_b = _truncate(pieces[0], pieces[1] if pair else None, budget)
    truncated = len(kept_a) + (len(kept_b) if pair else 0) < sum(len(p) for p in pieces)
    ids, groups, labels = [], [], []

    def add_special(token_id):
        groups.append((len(ids), 1))
        ids.append(token_id)
        labels.append(IGNORE_INDEX)

    def add_sentence(kept):
        previous_word, previous_span = None, None
        for word, span, piece in kept:
            if span != previous_span:
                groups.append((len(ids), 0))
            groups[-1] = (groups[-1][0], groups[-1][1] + 1)
            first_piece = tags is not None and word != previous_word
            labels.append((tags[word] if len(tags) else 0) if first_piece else IGNORE_INDEX)
            ids.append(piece)
            previous_word, previous_span = word, span

    for token in before:
        add_special(token)
    add_sentence(kept_a)
    for token in between:
        add_special(token)
    if pair:
        add_sentence(kept_b)
    for token in after:
        add_special(token)
    kept_groups = groups[: cfg.max_spans]
    stats = TruncationStats(
        examples=1,
        truncated_examples=int(truncated),
        examples_with_dropped_spans=int(len(groups) > cfg.max_spans),
        dropped_spans=max(0, len(groups) - cfg.max_spans),
        spans_with_dropped_pieces=sum(length > cfg.max_span_len for _, length in kept_groups),
        dropped_pieces=sum(max(0, length - cfg.max_span_len) for _, length in kept_groups),
        words_without_tokens=0 if truncated else sum(
            not _word_pieces(tokenizer, w) for w in list(words_a) + list(words_b or [])
        ),
    )
    return {
        "input_ids": ids,
        "span_starts": [start for start, _ in kept_groups],
        "span_lengths": [min(length, cfg.max_span_len) for _, length in kept_groups],
        "labels": labels,
    }, stats


def _random_partition(rng: random.Random, n: int) -> list[int]:
    spans, left = [], n
    while left:
        spans.append(rng.randint(1, min(5, left)))
        left -= spans[-1]
    return spans


def _random_frame(seed: int, n: int, pair: bool, tagging: bool = False, max_words: int = 30) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        words_a = [rng.choice(TEST_WORDS) for _ in range(rng.randint(1, max_words))]
        row = {"idx": 100 + i, "words_a": words_a, "spans_a": _random_partition(rng, len(words_a))}
        if pair:
            row["words_b"] = [rng.choice(TEST_WORDS) for _ in range(rng.randint(1, max_words))]
            row["spans_b"] = _random_partition(rng, len(row["words_b"]))
        if tagging:
            row["tags"] = [] if rng.random() < 0.2 else [rng.randint(0, 8) for _ in words_a]
        else:
            row["label"] = rng.randint(-1, 1)
        rows.append(row)
    return pd.DataFrame(rows)


def _check_against_oracle(tokenizer, df: pd.DataFrame, task, cfg: FeatureConfig, batch_size: int) -> None:
    dataset, stats = encode_split(df, tokenizer, task, cfg, batch_size=batch_size)
    expected_stats = TruncationStats()
    assert len(dataset) == len(df)
    for row, record in zip(df.itertuples(), dataset):
        expected, example_stats = oracle_example(
            tokenizer, cfg, row.words_a, row.spans_a,
            getattr(row, "words_b", None) if task.is_pair else None,
            getattr(row, "spans_b", None) if task.is_pair else None,
            getattr(row, "tags", None) if task.is_tagging else None,
        )
        expected_stats += example_stats
        assert record["idx"] == row.idx
        assert record["input_ids"] == expected["input_ids"]
        assert record["attention_mask"] == [1] * len(expected["input_ids"])
        assert record["span_starts"] == expected["span_starts"]
        assert record["span_lengths"] == expected["span_lengths"]
        if task.is_tagging:
            assert record["labels"] == expected["labels"]
        else:
            assert record["labels"] == row.label
    assert stats == expected_stats


# ---------------------------------------------------------------------------------------------------------
# Alignment against the oracle


@pytest.mark.parametrize("tokenizer_name", ["wordpiece", "bpe"])
@pytest.mark.parametrize("task_name", ["sst2", "mrpc", "conll2003"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10_000),
    max_seq_len=st.integers(4, 80),
    max_spans=st.integers(1, 40),
    max_span_len=st.integers(1, 6),
    batch_size=st.integers(1, 7),
)
def test_encode_matches_oracle(
    request, tokenizer_name, task_name, seed, max_seq_len, max_spans, max_span_len, batch_size
):
    tokenizer = request.getfixturevalue(tokenizer_name)
    task = get_task(task_name)
    df = _random_frame(seed, n=6, pair=task.is_pair, tagging=task.is_tagging)
    cfg = FeatureConfig(max_seq_len=max_seq_len, max_spans=max_spans, max_span_len=max_span_len)
    _check_against_oracle(tokenizer, df, task, cfg, batch_size)


@pytest.mark.parametrize("tokenizer_name", ["wordpiece", "bpe"])
def test_default_limits_long_inputs(request, tokenizer_name):
    """Long pairs at the default limits: truncation, dropped spans and pieces all happen and are counted."""
    tokenizer = request.getfixturevalue(tokenizer_name)
    df = _random_frame(7, n=40, pair=True, max_words=120)
    _check_against_oracle(tokenizer, df, get_task("mrpc"), FeatureConfig(), batch_size=16)
    _, stats = encode_split(df, tokenizer, get_task("mrpc"), FeatureConfig(max_span_len=2))
    assert stats.truncated_examples > 0 and stats.dropped_pieces > 0


def test_specials_are_spans_of_length_one(bpe, wordpiece):
    df = pd.DataFrame({
        "idx": [0], "words_a": [["New", "York", "said"]], "spans_a": [[2, 1]],
        "words_b": [["the", "cat"]], "spans_b": [[2]], "label": [1],
    })
    cfg = FeatureConfig()
    (record,) = encode_split(df, bpe, get_task("mrpc"), cfg)[0]
    tokens = bpe.convert_ids_to_tokens(record["input_ids"])
    special_positions = [i for i, t in enumerate(tokens) if t in ("<s>", "</s>")]
    assert len(special_positions) == 4  # <s> a </s></s> b </s>
    spans = dict(zip(record["span_starts"], record["span_lengths"]))
    assert all(spans[p] == 1 for p in special_positions)
    assert len(record["span_starts"]) == 4 + 3  # specials + "New York" + "said" + "the cat"
    assert sum(record["span_lengths"]) == len(record["input_ids"])  # nothing uncovered
    (record,) = encode_split(df, wordpiece, get_task("mrpc"), cfg)[0]
    assert record["token_type_ids"][0] == 0 and record["token_type_ids"][-1] == 1
    assert len(record["span_starts"]) == 3 + 3


@pytest.mark.parametrize("tokenizer_name", ["wordpiece", "bpe"])
def test_zero_token_words_keep_alignment(request, tokenizer_name):
    tokenizer = request.getfixturevalue(tokenizer_name)
    # byte-level BPE gives bytes for every character: only the empty word has no piece there
    invisible = "\u200b" if tokenizer_name == "wordpiece" else ""
    assert _word_pieces(tokenizer, "") == [] and _word_pieces(tokenizer, invisible) == []
    words = ["the", "", "cat", invisible, "", "sat"]
    df = pd.DataFrame({"idx": [5], "words_a": [words], "spans_a": [[2, 1, 2, 1]], "tags": [[1, 2, 3, 4, 5, 6]]})
    (record,), stats = encode_split(df, tokenizer, get_task("conll2003"), FeatureConfig())
    cat, sat = _word_pieces(tokenizer, "cat"), _word_pieces(tokenizer, "sat")
    the = _word_pieces(tokenizer, "the")
    # span ["the", ""] keeps the pieces of "the"; span [invisible, ""] vanishes; "sat" keeps its own span
    assert record["span_lengths"] == [1, len(the), len(cat), len(sat), 1]
    first = [label for label in record["labels"] if label != IGNORE_INDEX]
    assert first == [1, 3, 6]  # the tags of "the", "cat", "sat"
    assert stats.words_without_tokens == 3


# ---------------------------------------------------------------------------------------------------------
# Labels and columns


def test_tagging_labels_first_piece(wordpiece):
    words = ["unbelievable", "cat", "tokenization"]
    df = pd.DataFrame({"idx": [0, 1], "words_a": [words, words], "tags": [[1, 2, 3], []]})
    dataset, _ = encode_split(df, wordpiece, get_task("conll2003"), FeatureConfig())
    assert "span_starts" not in dataset.column_names  # no segmentation given
    labelled, unlabeled = dataset["labels"]
    expected = [IGNORE_INDEX]
    for tag, word in zip([1, 2, 3], words):
        expected += [tag] + [IGNORE_INDEX] * (len(_word_pieces(wordpiece, word)) - 1)
    expected.append(IGNORE_INDEX)
    assert labelled == expected
    assert unlabeled == [0 if label >= 0 else label for label in expected]  # positions still marked


def test_regression_and_classification_labels(wordpiece):
    df = pd.DataFrame({
        "idx": [3, 9], "words_a": [["a"], ["cat"]], "words_b": [["the"], ["mat"]], "label": [4.25, np.nan],
    })
    dataset, _ = encode_split(df, wordpiece, get_task("stsb"), FeatureConfig())
    assert dataset["idx"] == [3, 9]
    assert dataset["labels"][0] == 4.25 and np.isnan(dataset["labels"][1])
    assert set(dataset.column_names) == {"idx", "input_ids", "attention_mask", "token_type_ids", "labels"}
    single = pd.DataFrame({"idx": [0], "words_a": [["cat"]], "label": [-1]})
    assert encode_split(single, wordpiece, get_task("sst2"), FeatureConfig())[0]["labels"] == [-1]


def test_stats_are_logged(wordpiece, caplog):
    df = _random_frame(3, n=4, pair=False, max_words=60)
    with caplog.at_level(logging.INFO, logger="spanft"):
        _, stats = encode_split(df, wordpiece, get_task("sst2"), FeatureConfig(max_seq_len=16), name="dev")
    assert stats.truncated_examples == 4
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(message.startswith("dev: 4 examples; 4 truncated") for message in warnings)


# ---------------------------------------------------------------------------------------------------------
# Bad input


def test_bad_inputs(wordpiece):
    sst2 = get_task("sst2")
    bad_spans = pd.DataFrame({"idx": [7], "words_a": [["a", "cat"]], "spans_a": [[1]], "label": [0]})
    with pytest.raises(SpanftError, match="idx 7: spans_a"):
        encode_split(bad_spans, wordpiece, sst2, FeatureConfig())
    zero_span = pd.DataFrame({"idx": [7], "words_a": [["a", "cat"]], "spans_a": [[2, 0]], "label": [0]})
    with pytest.raises(SpanftError, match="must be positive"):
        encode_split(zero_span, wordpiece, sst2, FeatureConfig())
    bad_tags = pd.DataFrame({"idx": [8], "words_a": [["a", "cat"]], "tags": [[1]]})
    with pytest.raises(SpanftError, match="idx 8: 1 tags for 2 words"):
        encode_split(bad_tags, wordpiece, get_task("conll2003"), FeatureConfig())
    no_b = pd.DataFrame({"idx": [0], "words_a": [["a"]], "label": [0]})
    with pytest.raises(SpanftError, match="words_b"):
        encode_split(no_b, wordpiece, get_task("mrpc"), FeatureConfig())
    with pytest.raises(SpanftError, match="not a fast tokenizer"):
        encode_split(no_b, SimpleNamespace(is_fast=False, name_or_path="slow-tok"), sst2, FeatureConfig())
    with pytest.raises(SpanftError, match="max_spans"):
        FeatureConfig(max_spans=0)


def test_bpe_without_prefix_space_is_refused():
    with pytest.raises(SpanftError, match="add_prefix_space=True"):
        encode_split(pd.DataFrame({"idx": [0], "words_a": [["a"]], "label": [0]}),
                     _byte_level_bpe(add_prefix_space=False), get_task("sst2"), FeatureConfig())


# ---------------------------------------------------------------------------------------------------------
# Collator


@settings(max_examples=50, deadline=None)
@given(
    lengths=st.lists(st.tuples(st.integers(1, 12), st.integers(1, 6)), min_size=1, max_size=6),
    tagging=st.booleans(),
    multiple=st.sampled_from([None, 8]),
)
def test_collator_pads_and_keeps_rows(lengths, tagging, multiple):
    tokenizer = SimpleNamespace(pad_token_id=77)
    rng = np.random.default_rng(len(lengths))
    features = []
    for i, (n_tokens, n_spans) in enumerate(lengths):
        features.append({
            "idx": i,
            "input_ids": rng.integers(0, 50, n_tokens).tolist(),
            "attention_mask": [1] * n_tokens,
            "token_type_ids": [0] * n_tokens,
            "span_starts": rng.integers(0, n_tokens, n_spans).tolist(),
            "span_lengths": rng.integers(1, 4, n_spans).tolist(),
            "labels": rng.integers(0, 9, n_tokens).tolist() if tagging else int(rng.integers(0, 3)),
        })
    batch = SpanCollator(tokenizer, pad_to_multiple_of=multiple)(features)
    assert "idx" not in batch
    width = max(n for n, _ in lengths)
    if multiple:
        width = -(-width // multiple) * multiple
    assert batch["input_ids"].shape == (len(features), width)
    assert batch["span_starts"].shape == (len(features), max(s for _, s in lengths))
    pads = {
        "input_ids": 77, "attention_mask": 0, "token_type_ids": 0, "span_starts": 0, "span_lengths": 0, "labels": -100,
    }
    for key, pad in pads.items():
        if key == "labels" and not tagging:
            assert batch[key].dtype == torch.long and batch[key].tolist() == [f[key] for f in features]
            continue
        for row, feature in zip(batch[key].tolist(), features):
            n = len(feature[key])
            assert row[:n] == feature[key] and all(v == pad for v in row[n:])


def test_collator_float_labels():
    features = [{"input_ids": [1, 2], "labels": 2.5}, {"input_ids": [1], "labels": float("nan")}]
    batch = SpanCollator(SimpleNamespace(pad_token_id=0))(features)
    assert batch["labels"].dtype == torch.float32
    assert batch["labels"][0] == 2.5 and torch.isnan(batch["labels"][1])
    assert batch["input_ids"].tolist() == [[1, 2], [1, 0]]


def test_collated_batch_runs_the_span_model(wordpiece):
    """End to end: encode_split -> SpanCollator -> SpanModel on a tiny random-init BERT."""
    from transformers import BertConfig, BertModel

    from spanft.model.span_model import SpanConfig, SpanModel

    torch.manual_seed(0)
    backbone = BertModel(BertConfig(
        vocab_size=len(wordpiece.get_vocab()), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128,
    ))
    df = _random_frame(11, n=5, pair=True)
    dataset, _ = encode_split(df, wordpiece, get_task("mrpc"), FeatureConfig(max_seq_len=64))
    batch = SpanCollator(wordpiece)(list(dataset))
    model = SpanModel(backbone, SpanConfig(num_labels=2, task_type="pair"))
    out = model(**batch)
    assert out.logits.shape == (5, 2) and torch.isfinite(out.loss)
    out.loss.backward()
