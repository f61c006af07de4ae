"""Chunker segmentation (the "+NLTK SF" ablation): POS tags + an NLTK RegexpParser NP/VP grammar.

Every chunk is a span; every word outside a chunk is a span of its own. The tagger is either an
NLTK ``PerceptronTagger`` trained here on tagged sentences (``spanft train-tagger``; the offline
default, trained on the synthetic corpus's tags) or NLTK's pretrained ``averaged_perceptron_tagger_eng``.
The tagger file is one JSON object written by this module (NLTK's own save/load confines model
files to its data directories).
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path
from typing import Sequence

from spanft.errors import SpanftError, where
from spanft.fileio import atomic_open, read_text, read_text_lines

log = logging.getLogger("spanft")

TAGGER_FORMAT = "spanft-perceptron-tagger/1"
PRETRAINED_NAME = "averaged_perceptron_tagger_eng"

# Noun phrases: optional determiner/possessive, adjectives/numbers, one or more nouns; or a pronoun.
# Verb phrases: optional modal and adverb, a verb group, optional particle.
GRAMMAR = r"""
NP: {<DT|PDT|PRP\$|WP\$>?<JJ.*|CD|VBN|VBG>*<NN.*>+<POS>?<NN.*>*}
    {<PRP|EX|WP>}
VP: {<MD>?<RB.*>*<VB.*>+<RP>?}
"""


def read_tagged_sentences(path: str | Path) -> list[list[tuple[str, str]]]:
    """``word<TAB>tag`` lines, a blank line between sentences (the corpus stage's tagged sentences)."""
    sentences: list[list[tuple[str, str]]] = []
    current: list[tuple[str, str]] = []
    for number, line in read_text_lines(path, what="tagged sentences file"):
        if not line.strip():
            if current:
                sentences.append(current)
                current = []
            continue
        word, tab, tag = line.partition("\t")
        if not tab or not word or not tag or "\t" in tag:
            raise SpanftError(f"{where(path, number)}: expected 'word<TAB>tag'")
        current.append((word, tag))
    if current:
        sentences.append(current)
    if not sentences:
        raise SpanftError(f"{path}: no tagged sentences")
    return sentences


def train_tagger(sentences: Sequence[Sequence[tuple[str, str]]], iterations: int = 5, seed: int = 0):
    """Train NLTK's PerceptronTagger deterministically (it shuffles with the global ``random``)."""
    from nltk.tag.perceptron import PerceptronTagger

    tagger = PerceptronTagger(load=False)
    state = random.getstate()
    random.seed(seed)
    try:
        tagger.train([list(s) for s in sentences], nr_iter=iterations)
    finally:
        random.setstate(state)
    return tagger


def save_tagger(tagger, path: str | Path, *, inputs: Sequence[str | Path] = ()) -> None:
    weights, tagdict, classes = tagger.encode_json_obj()
    payload = {"format": TAGGER_FORMAT, "weights": weights, "tagdict": tagdict, "classes": sorted(classes)}
    with atomic_open(path, inputs=inputs) as out:
        json.dump(payload, out, sort_keys=True)


def load_tagger(path: str | Path):
    """A tagger file written by :func:`save_tagger`; a one-line error for anything else."""
    from nltk.tag.perceptron import PerceptronTagger

    try:
        payload = json.loads(read_text(path, what="tagger file"))
    except json.JSONDecodeError as exc:
        raise SpanftError(f"{where(path, exc.lineno)}: not a tagger file (invalid JSON: {exc.msg})") from None
    if not isinstance(payload, dict) or payload.get("format") != TAGGER_FORMAT:
        raise SpanftError(f"{path}: not a tagger file written by 'spanft train-tagger'")
    tagger = PerceptronTagger(load=False)
    tagger.decode_json_params((payload["weights"], payload["tagdict"], payload["classes"]))
    return tagger


def load_pretrained_tagger():
    """NLTK's pretrained English tagger, or a one-line error saying how to install it."""
    from nltk.tag.perceptron import PerceptronTagger

    try:
        return PerceptronTagger()
    except LookupError:
        raise SpanftError(
            f"NLTK tagger data '{PRETRAINED_NAME}' is not installed: run "
            f"'python -m nltk.downloader {PRETRAINED_NAME}' or pass --tagger FILE from 'spanft train-tagger'"
        ) from None


def chunk_lengths(tree) -> list[int]:
    """Span lengths of a RegexpParser tree: a chunk is one span, a bare (word, tag) leaf one more."""
    return [len(node.leaves()) if hasattr(node, "leaves") else 1 for node in tree]


class ChunkSegmenter:
    """Spans = NP/VP chunks of the tagged sentence; words outside chunks are single spans."""

    def __init__(self, tagger, tagger_name: str, grammar: str = GRAMMAR) -> None:
        import nltk

        self.tagger = tagger
        self.tagger_name = tagger_name
        self.grammar = grammar
        self.parser = nltk.RegexpParser(grammar)

    @classmethod
    def load(cls, tagger_path: str | Path | None = None) -> "ChunkSegmenter":
        if tagger_path is None:
            return cls(load_pretrained_tagger(), f"nltk:{PRETRAINED_NAME}")
        from spanft.fileio import file_digest

        tagger = load_tagger(tagger_path)
        return cls(tagger, f"file:{Path(tagger_path).name}:sha256={file_digest(tagger_path)[:16]}")

    def describe(self) -> dict:
        return {"method": "chunker", "tagger": self.tagger_name, "grammar": self.grammar.strip()}

    def segment(self, words: Sequence[str]) -> list[int]:
        if not words:
            return []
        tagged = self.tagger.tag(list(words))
        return chunk_lengths(self.parser.parse(tagged))

    def segment_batch(self, sentences: Sequence[Sequence[str]]) -> list[list[int]]:
        return [self.segment(words) for words in sentences]


def train_tagger_file(tagged_path: str | Path, out: str | Path, iterations: int = 5, seed: int = 0) -> None:
    """The tagger stage: train on a tagged-sentences file and save the tagger to ``out``."""
    sentences = read_tagged_sentences(tagged_path)
    tagger = train_tagger(sentences, iterations=iterations, seed=seed)
    save_tagger(tagger, out, inputs=[tagged_path])
    log.info("train-tagger: %d sentences, %d tags -> %s", len(sentences), len(tagger.classes), out)
