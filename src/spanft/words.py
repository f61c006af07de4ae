"""The one word tokenizer shared by n-gram counting and task segmentation.

Dictionary entries can only match task text if both were split into words the same way, so the
corpus counter, the dictionary and every segmenter call this module. The default splitter is the
BERT pre-tokenizer from ``tokenizers`` (split on whitespace and on each punctuation character);
``pretokenized`` text (WikiText ``.tokens``, CoNLL words) is split on whitespace only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

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
        """Words of many lines (one list per line)."""
        return [self.words(text) for text in texts]

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
