"""Tokenizer training for built backbones: a WordPiece (BERT) or byte-level BPE (RoBERTa) vocabulary from the corpus.

``train_wordpiece`` learns an uncased (or cased) BERT WordPiece vocabulary and returns a ``BertTokenizerFast``;
``train_byte_level_bpe`` learns a cased byte-level BPE vocabulary (``<s> <pad> </s> <unk> <mask>``) and returns a
``RobertaTokenizerFast`` saved with ``add_prefix_space=False`` like ``roberta-large``. Both train with
``tokenizers``, and neither the vocabulary nor its ids depend on the trainer's hash-map order, so the same corpus
gives byte-identical files in any process.
"""

from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path
from typing import Iterator

from tokenizers import (
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    trainers,
)
from transformers import BertTokenizerFast, RobertaTokenizerFast

from spanft.errors import SpanftError
from spanft.fileio import read_text_lines

log = logging.getLogger("spanft")

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
BPE_SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # RoBERTa's ids 0..3, mask right after
BYTE_ALPHABET_SIZE = 256


def train_wordpiece(corpus: Path, vocab_size: int, max_lines: int = 0, lowercase: bool = True):
    """A BERT WordPiece fast tokenizer (uncased unless ``lowercase`` is false) trained on ``corpus``.

    The trainer numbers word-internal characters (``##x``) in hash-map order, which changes from process to
    process, and breaks ties between equally frequent merges by those numbers: the learned vocabulary itself
    varied. A first pass without merges finds those characters; declaring them (sorted) right after the
    special tokens fixes their numbers, so the second pass learns the same vocabulary in every process.
    """
    alphabet = _wordpiece_vocabulary(corpus, 0, max_lines, lowercase, SPECIAL_TOKENS)
    continuing = sorted(token for token in alphabet if token.startswith("##") and len(token) == 3)
    learned = _wordpiece_vocabulary(corpus, vocab_size, max_lines, lowercase, [*SPECIAL_TOKENS, *continuing])
    # WordPiece only uses membership: number the special tokens first, then the rest sorted.
    learned -= set(SPECIAL_TOKENS)
    vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *sorted(learned)])}
    _check_vocabulary(corpus, len(vocab), len(SPECIAL_TOKENS), vocab_size)
    return BertTokenizerFast(vocab=vocab, do_lower_case=lowercase)


def _wordpiece_vocabulary(corpus: Path, vocab_size: int, max_lines: int, lowercase: bool, specials: list[str]) -> set:
    raw = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    raw.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    raw.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=specials, min_frequency=2, show_progress=False
    )
    raw.train_from_iterator(_head_lines(corpus, max_lines), trainer=trainer)
    return set(raw.get_vocab())


def train_byte_level_bpe(corpus: Path, vocab_size: int, max_lines: int = 0):
    """A cased byte-level BPE ``RobertaTokenizerFast`` trained on ``corpus`` (RoBERTa's specials and layout).

    Ids: the special tokens, the 256 byte symbols sorted, then one token per merge in merge order; the merge
    ranks are the model. The trainer breaks count ties by token ids (not hash order), and the ids it hands out
    follow this order, so the vocabulary comes out the same in every process.
    """
    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, special_tokens=BPE_SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    raw.train_from_iterator(_head_lines(corpus, max_lines), trainer=trainer)
    model = json.loads(raw.to_str())["model"]
    vocab: dict[str, int] = model["vocab"]
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    _check_vocabulary(corpus, len(vocab), len(BPE_SPECIAL_TOKENS) + BYTE_ALPHABET_SIZE, vocab_size)
    _check_bpe_layout(vocab, merges)
    return RobertaTokenizerFast(vocab=vocab, merges=merges, add_prefix_space=False)


def _check_bpe_layout(vocab: dict[str, int], merges: list[tuple[str, str]]) -> None:
    """The trainer's ids are the canonical order described above (a guard against a change in ``tokenizers``)."""
    merged = [token for token in dict.fromkeys(a + b for a, b in merges) if token not in BPE_SPECIAL_TOKENS]
    alphabet = sorted(set(vocab) - set(BPE_SPECIAL_TOKENS) - set(merged))
    if sorted(vocab, key=vocab.get) != [*BPE_SPECIAL_TOKENS, *alphabet, *merged]:
        raise RuntimeError("tokenizers' BpeTrainer numbered its vocabulary in an unexpected order")


def _check_vocabulary(corpus: Path, size: int, floor: int, asked: int) -> None:
    """``floor``: the entries a vocabulary has before it learns anything from the corpus."""
    if size <= floor:
        raise SpanftError(f"{corpus}: corpus too small to train a vocabulary")
    if size < asked:
        log.info("vocabulary has %d entries (asked for %d: the corpus has no more)", size, asked)


def _head_lines(corpus: Path, max_lines: int) -> Iterator[str]:
    lines = corpus_lines(corpus)
    return itertools.islice(lines, max_lines) if max_lines > 0 else lines


def corpus_lines(corpus: Path) -> Iterator[str]:
    for _, line in read_text_lines(corpus, "corpus"):
        if line.strip():
            yield line
