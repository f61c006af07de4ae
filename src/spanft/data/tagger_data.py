"""The chunker's tagger stage: where its tagged sentences come from, training, held-out accuracy, the file.

``chunker.source`` picks the tagger (:data:`TAGGER_SOURCES`):

- ``synthetic``: NLTK's PerceptronTagger trained on sentences of the synthetic language (the synthetic corpus's
  seed), for synthetic task data only: those tags describe that language and nothing else;
- ``conll``: the same tagger trained on CoNLL-2003 train's Penn POS column (official files in CoNLL-2003's
  folder, params ``data.dir`` joined with ``chunker.conll_dir``, or the hub's ``pos_tags``), for real task
  data: real English, offline, seconds to train;
- ``nltk``: NLTK's pretrained tagger, downloaded into the workspace by this stage.

Held-out accuracy is stored in the tagger file's ``about`` block (Table 6's note reports it): on CoNLL-2003
test POS (dev too, when present) with real task data, on fresh synthetic sentences with synthetic data.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from spanft.data.conll_pos import conll_pos_sentences
from spanft.data.corpus import TAGGED_HELDOUT_STREAM, synthetic_tagged_sentences
from spanft.data.hub_readers import hub_revision
from spanft.data.registry import get_task
from spanft.data.tagger_sources import REAL_DATA_SOURCES, check_tagger_source
from spanft.errors import SpanftError
from spanft.text.chunker import (
    PRETRAINED_NAME,
    fetch_pretrained_tagger,
    save_tagger,
    tagging_accuracy,
    train_tagger,
)

log = logging.getLogger("spanft")

def make_tagger(
    out: str | Path,
    tagger_source: str,
    data_source: str,
    conll_dir: str | Path | None = None,
    revision: str | None = None,
    corpus_seed: int = 0,
    tagged_sentences: int = 5000,
    download_dir: str | Path = "data/nltk_data",
    iterations: int = 5,
    seed: int = 0,
) -> dict:
    """Write the tagger file ``out`` for ``tagger_source``; return its ``about`` block.

    ``data_source``/``conll_dir``/``revision`` locate CoNLL-2003 (params ``data.source``, its folder ``data.dir`` /
    ``chunker.conll_dir``, ``data.revisions.conll2003``);
    ``corpus_seed``/``tagged_sentences`` draw the synthetic sentences (params ``corpus.seed``,
    ``corpus.tagged_sentences``).
    """
    check_tagger_source(tagger_source, data_source)
    start = time.perf_counter()
    if tagger_source == "nltk":
        tagger = fetch_pretrained_tagger(download_dir)
        about = {"source": "nltk", "trained_on": f"NLTK's pretrained {PRETRAINED_NAME} (downloaded into {download_dir})"}
    else:
        sentences, about = _training_sentences(tagger_source, data_source, conll_dir, revision, corpus_seed,
                                               tagged_sentences)
        tagger = train_tagger(sentences, iterations=iterations, seed=seed)
        about |= {"sentences": len(sentences), "tokens": sum(map(len, sentences)), "iterations": iterations,
                  "seed": seed}
    about |= _held_out_accuracy(tagger, data_source, conll_dir, revision, corpus_seed, tagged_sentences)
    save_tagger(tagger, out, about)  # no timings inside: the same inputs give the same file
    scores = ", ".join(f"{split} {value:.4f}" for split, value in about["accuracy"].items())
    log.info("tagger: %s -> %s in %.1f s; POS accuracy %s (%s)", about["trained_on"], out,
             time.perf_counter() - start, scores, about["evaluated_on"])
    return about


def _training_sentences(tagger_source, data_source, conll_dir, revision, corpus_seed, n):
    if tagger_source == "synthetic":
        about = {"source": "synthetic", "trained_on": f"{n} sentences of the synthetic language (seed {corpus_seed})"}
        return synthetic_tagged_sentences(n, corpus_seed), about
    task = get_task("conll2003")
    sentences = conll_pos_sentences(task, task.train_split, data_source, conll_dir, revision)
    if not sentences:
        raise SpanftError("CoNLL-2003 train has no POS-tagged sentences to train the tagger on")
    return sentences, {"source": "conll", "trained_on": f"CoNLL-2003 train POS ({_where(data_source, conll_dir, revision)})"}


def _held_out_accuracy(tagger, data_source, conll_dir, revision, corpus_seed, n) -> dict:
    """Accuracy on CoNLL-2003 dev and test POS (real data) or on fresh synthetic sentences (synthetic data)."""
    if data_source not in REAL_DATA_SOURCES:
        held_out = synthetic_tagged_sentences(max(1, n // 5), corpus_seed, TAGGED_HELDOUT_STREAM)
        return {"accuracy": {"heldout": tagging_accuracy(tagger, held_out)},
                "evaluated_on": f"{len(held_out)} held-out synthetic sentences"}
    task = get_task("conll2003")
    accuracy = {}
    for split in task.eval_splits:
        sentences = conll_pos_sentences(task, split, data_source, conll_dir, revision)
        if sentences:
            accuracy[split] = tagging_accuracy(tagger, sentences)
    return {"accuracy": accuracy, "evaluated_on": f"CoNLL-2003 POS ({_where(data_source, conll_dir, revision)})"}


def _where(data_source: str, conll_dir, revision) -> str:
    if data_source == "local":
        return f"files in {conll_dir}"
    task = get_task("conll2003")
    rev = hub_revision(task, revision)
    return f"hub {task.hub_id}" + (f"@{rev}" if rev else "")
