"""Chunker segmentation (the "+NLTK SF" ablation): POS tags + an NLTK RegexpParser NP/VP grammar.

Every chunk is a span; every word outside a chunk is a span of its own. The tagger is an NLTK
``PerceptronTagger``: trained here on tagged sentences (the synthetic language's tags with synthetic task
data, CoNLL-2003's Penn POS column with real task data: offline either way), or NLTK's pretrained
``averaged_perceptron_tagger_eng`` fetched into the workspace (:func:`fetch_pretrained_tagger`).
The tagger file is one JSON object written by this module (NLTK's own save/load confines model
files to its data directories); its ``about`` block says what the tagger learned from and its accuracy
on held-out tagged sentences.

Tags follow the Penn Treebank's spelling, brackets included (``-LRB-``/``-RRB-``, :func:`penn_tag`): the
CoNLL-2003 files and the hub's ``pos_tags`` names write ``(``/``)``, the synthetic language writes Penn's.
"""

from __future__ import annotations

# nltk is imported where it is used: `import nltk.tag.perceptron` takes seconds, and every segment stage
# imports this module while only the chunker uses it.
import json
import logging
import random
from pathlib import Path
from typing import Sequence

from spanft.errors import SpanftError, where
from spanft.fileio import atomic_open, file_digest, read_text, read_text_lines

log = logging.getLogger("spanft")

TAGGER_FORMAT = "spanft-perceptron-tagger/1"
PRETRAINED_NAME = "averaged_perceptron_tagger_eng"
PENN_BRACKETS = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-", "}": "-RCB-"}


def penn_tag(tag: str) -> str:
    """A POS tag in the Penn Treebank's spelling (``(`` -> ``-LRB-``); other tags unchanged."""
    return PENN_BRACKETS.get(tag, tag)

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


def tagging_accuracy(tagger, sentences: Sequence[Sequence[tuple[str, str]]]) -> float:
    """Share of tokens whose predicted tag equals the gold tag (sentences tagged one by one)."""
    correct = total = 0
    for sentence in sentences:
        words = [word for word, _ in sentence]
        predicted = tagger.tag(words)
        correct += sum(p == gold for (_, p), (_, gold) in zip(predicted, sentence))
        total += len(sentence)
    if total == 0:
        raise SpanftError("tagging accuracy: no tagged tokens to evaluate on")
    return correct / total


def save_tagger(tagger, path: str | Path, about: dict | None = None, *,
                inputs: Sequence[str | Path] = ()) -> None:
    """Write the tagger file; ``about`` (training data, held-out accuracy) is stored beside the weights."""
    weights, tagdict, classes = tagger.encode_json_obj()
    payload = {"format": TAGGER_FORMAT, "weights": weights, "tagdict": tagdict, "classes": sorted(classes),
               "about": about or {}}
    with atomic_open(path, inputs=inputs) as out:
        json.dump(payload, out, sort_keys=True)


def read_tagger_about(path: str | Path) -> dict:
    """The ``about`` block of a tagger file (what it was trained on, its held-out accuracy); {} if none."""
    return dict(_read_tagger_payload(path).get("about") or {})


def describe_tagger(about: dict) -> str:
    """One line for reports: where the tagger comes from and its held-out accuracy."""
    text = str(about.get("trained_on") or "an NLTK PerceptronTagger")
    scores = about.get("accuracy") or {}
    if scores:
        text += "; POS accuracy " + ", ".join(f"{split} {value:.4f}" for split, value in sorted(scores.items()))
        held_out = about.get("evaluated_on")
        text += f" ({held_out})" if held_out else ""
    return text


def load_tagger(path: str | Path):
    """A tagger file written by :func:`save_tagger`; a one-line error for anything else."""
    return _tagger_from_payload(_read_tagger_payload(path))


def _tagger_from_payload(payload: dict):
    from nltk.tag.perceptron import PerceptronTagger

    tagger = PerceptronTagger(load=False)
    tagger.decode_json_params((payload["weights"], payload["tagdict"], payload["classes"]))
    return tagger


def _read_tagger_payload(path: str | Path) -> dict:
    try:
        payload = json.loads(read_text(path, what="tagger file"))
    except json.JSONDecodeError as exc:
        raise SpanftError(f"{where(path, exc.lineno)}: not a tagger file (invalid JSON: {exc.msg})") from None
    if not isinstance(payload, dict) or payload.get("format") != TAGGER_FORMAT:
        raise SpanftError(f"{path}: not a tagger file written by 'spanft train-tagger'")
    return payload


def load_pretrained_tagger():
    """NLTK's pretrained English tagger, or a one-line error saying how to install it."""
    from nltk.tag.perceptron import PerceptronTagger

    try:
        return PerceptronTagger()
    except LookupError:
        raise SpanftError(
            f"NLTK tagger data '{PRETRAINED_NAME}' is not installed: run "
            f"'python -m nltk.downloader {PRETRAINED_NAME}' or pass --tagger FILE (a tagger file: trained on "
            f"CoNLL-2003 POS or fetched by the tagger stage)"
        ) from None


def fetch_pretrained_tagger(download_dir: str | Path):
    """NLTK's pretrained English tagger, downloaded into ``download_dir`` (the workspace, not ~/nltk_data).

    The model's three JSON files are read directly, so nothing depends on NLTK's data search path.
    Offline, a one-line error names the way to train a tagger without a download.
    """
    import nltk
    from nltk.tag.perceptron import PerceptronTagger

    download_dir = Path(download_dir)
    folder = download_dir / "taggers" / PRETRAINED_NAME
    tagger = PerceptronTagger(load=False)
    files = [folder / name for name in tagger.param_files("eng")]
    if not all(f.is_file() for f in files):
        download_dir.mkdir(parents=True, exist_ok=True)
        try:
            ok = nltk.download(PRETRAINED_NAME, download_dir=str(download_dir), quiet=True, raise_on_error=True)
        except Exception as exc:  # urllib/socket/ValueError: all mean "not downloaded"
            ok, reason = False, (str(exc).strip().splitlines() or [type(exc).__name__])[0][:60]  # errors.MAX_LINE
        else:
            reason = "the downloader reported a failure"
        if not ok or not all(f.is_file() for f in files):
            raise SpanftError(
                f"could not download NLTK's tagger '{PRETRAINED_NAME}' into {download_dir} (offline? {reason}); "
                f"without network set chunker.source: conll (a tagger trained here on CoNLL-2003 POS tags)"
            )
    params = []
    for path in files:
        try:
            params.append(json.loads(read_text(path, what="NLTK tagger file")))
        except json.JSONDecodeError as exc:
            raise SpanftError(f"{where(path, exc.lineno)}: damaged NLTK tagger file ({exc.msg})") from None
    tagger.decode_json_params(params)
    return tagger


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
        payload = _read_tagger_payload(tagger_path)
        name = f"file:{Path(tagger_path).name}:sha256={file_digest(tagger_path)[:16]}"
        about = payload.get("about") or {}
        return cls(_tagger_from_payload(payload), f"{name} ({describe_tagger(about)})" if about else name)

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
