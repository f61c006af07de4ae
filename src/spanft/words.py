"""The one word tokenizer shared by n-gram counting and task segmentation.

Dictionary entries can only match task text if both were split into words the same way, so the
corpus counter, the dictionary and every segmenter call this module. The default splitter is the
BERT pre-tokenizer from ``tokenizers`` (split on whitespace and on each punctuation character);
``pretokenized`` text (WikiText ``.tokens``, CoNLL words) is split on whitespace only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
from tokenizers.pre_tokenizers import BertPreTokenizer


@dataclass(frozen=True)
class WordTokenizer:
    """Split text into words. ``lowercase`` folds case before splitting (params: ``words.lowercase``)."""

    lowercase: bool = True
    pretokenized: bool = False

    def words(self, text: str) -> list[str]:
        """Words of one sentence or paragraph."""
        if self.lowercase:
            text = text.lower()
        if self.pretokenized:
            return text.split()
        return [word for word, _ in _BERT_PRE_TOKENIZER.pre_tokenize_str(text)]

    def words_batch(self, texts: Sequence[str]) -> list[list[str]]:
        """Words of many lines at once (one call into ``tokenizers`` for the whole batch).

        Lines must not contain a newline; the result has one list per input line.
        """
        if self.pretokenized:
            return [self.words(text) for text in texts]
        if not texts:
            return []
        joined = "\n".join(texts)
        if self.lowercase:
            joined = joined.lower()
        pieces = _BERT_PRE_TOKENIZER.pre_tokenize_str(joined)
        if not pieces:
            return [[] for _ in texts]
        words, offsets = zip(*pieces)
        starts = np.fromiter((start for start, _ in offsets), dtype=np.int64, count=len(offsets))
        newlines = np.flatnonzero(np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32) == 10)
        if len(newlines) != len(texts) - 1:
            raise ValueError("words_batch: a line contains a newline character")
        cuts = np.searchsorted(starts, newlines)
        bounds = [0, *cuts.tolist(), len(words)]
        return [list(words[bounds[i]: bounds[i + 1]]) for i in range(len(texts))]

    def iter_words(self, texts: Iterable[str], batch_size: int = 2048) -> Iterable[list[str]]:
        """Stream ``words`` over an iterable of lines, batching the calls into ``tokenizers``."""
        batch: list[str] = []
        for text in texts:
            batch.append(text)
            if len(batch) >= batch_size:
                yield from self.words_batch(batch)
                batch = []
        if batch:
            yield from self.words_batch(batch)


def has_letter_or_digit(word: str) -> bool:
    """True when a word can take part in a dictionary n-gram (it holds a letter or a digit)."""
    return any(ch.isalnum() for ch in word)


_BERT_PRE_TOKENIZER = BertPreTokenizer()
