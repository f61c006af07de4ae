"""The corpus stage: the synthetic language's text, or WikiText from a local file or the hub.

Every corpus file is UTF-8, one paragraph a line, no blank lines, words and punctuation separated by
single spaces (the WikiText ``.tokens`` convention).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np
from tqdm import tqdm

from spanft.data.hub import settle_offline_mode
from spanft.data.provenance import hub_record, local_record, paths_digest
from spanft.data.synthetic.language import check_seed, language_for_seed
from spanft.errors import SpanftError
from spanft.fileio import atomic_open, read_text_lines, require_file

log = logging.getLogger("spanft")

# --------------------------------------------------------------------------------------------------
# Writers

_PARAGRAPHS_PER_CHUNK = 512


def write_synthetic_corpus(path: str | Path, tokens: int, seed: int) -> int:
    """Write about ``tokens`` words of the synthetic language, one paragraph a line; return words written.

    The file holds the shortest run of paragraphs with at least ``tokens`` words. Paragraphs are drawn
    in fixed-size chunks from one generator, so a corpus is a prefix of any larger one of the same seed.
    """
    if tokens <= 0:
        raise SpanftError(f"corpus.tokens must be > 0, got {tokens}")
    check_seed(seed)
    language = language_for_seed(seed)
    rng = np.random.default_rng([seed, 1])
    written = 0
    with atomic_open(path) as out, tqdm(total=tokens, unit="word", unit_scale=True, desc="corpus", disable=None) as bar:
        while written < tokens:
            pieces, ends, words = language.render_paragraphs(rng, _PARAGRAPHS_PER_CHUNK)
            cumulative = written + np.cumsum(words)
            keep = min(int(np.searchsorted(cumulative, tokens)) + 1, len(words))
            out.write("".join(pieces[: ends[keep - 1]].tolist()))
            bar.update(int(cumulative[keep - 1]) - written)
            written = int(cumulative[keep - 1])
    log.info("corpus: wrote %d words of the synthetic language (seed %d) to %s", written, seed, path)
    return written


# Random streams of the tagged sentences: training and held-out draws never share a sentence's randomness.
TAGGED_TRAIN_STREAM = 2
TAGGED_HELDOUT_STREAM = 3


def synthetic_tagged_sentences(n: int, seed: int, stream: int = TAGGED_TRAIN_STREAM) -> list[list[tuple[str, str]]]:
    """``n`` sentences of the synthetic language (corpus seed ``seed``) as ``(word, Penn tag)`` pairs."""
    if n <= 0:
        raise SpanftError(f"corpus.tagged_sentences must be > 0, got {n}")
    check_seed(seed)
    language = language_for_seed(seed)
    rng = np.random.default_rng([seed, stream])
    return [[(t.word, t.pos) for t in sentence] for sentence in language.sentences(rng, n)]


def write_tagged_sentences(path: str | Path, n: int, seed: int) -> None:
    """Write ``n`` synthetic sentences as ``word<TAB>PTB-tag`` lines, a blank line between sentences."""
    sentences = synthetic_tagged_sentences(n, seed)
    with atomic_open(path) as out:
        for sentence in sentences:
            out.write("".join(f"{word}\t{tag}\n" for word, tag in sentence) + "\n")
    log.info("corpus: wrote %d POS-tagged sentences to %s", n, path)


# --------------------------------------------------------------------------------------------------
# WikiText: a local file or the hub

_HEADING = re.compile(r"^\s*(=\s+)+[^=].*?(\s+=)+\s*$")


@dataclass
class _LineStats:
    kept: int = 0
    blank: int = 0
    headings: int = 0


def normalise_wikitext(lines: Iterable[str], stats: _LineStats) -> Iterator[str]:
    """WikiText lines -> paragraphs: strip, drop blank lines and `` = Heading = `` lines."""
    for line in lines:
        text = line.strip()
        if not text:
            stats.blank += 1
        elif _HEADING.match(text):
            stats.headings += 1
        else:
            stats.kept += 1
            yield text


def _write_paragraphs(lines: Iterable[str], out_path: str | Path, source: str, inputs: Iterable[str | Path] = ()) -> int:
    """Write normalised WikiText paragraphs atomically; return the number of paragraphs."""
    stats = _LineStats()
    with atomic_open(out_path, inputs=inputs) as out:
        for paragraph in tqdm(normalise_wikitext(lines, stats), unit="para", desc="corpus", disable=None):
            out.write(paragraph + "\n")
        if stats.kept == 0:
            raise SpanftError(
                f"{source}: no text paragraphs found ({stats.blank} blank, {stats.headings} heading lines)"
            )
    log.info(
        "corpus: %d paragraphs from %s to %s; dropped %d blank lines (paragraph separators) and %d "
        "' = Heading = ' lines (section titles, not paragraphs)",
        stats.kept, source, out_path, stats.blank, stats.headings,
    )
    return stats.kept


WIKITEXT_TRAIN_FILES = ("wiki.train.tokens", "wiki.train.raw")


def write_local_corpus(local_path: str | Path, out_path: str | Path) -> int:
    """A WikiText file on disk (``wiki.train.tokens`` / ``.raw``, or a directory holding one) -> corpus file;
    return paragraphs."""
    local_path = _wikitext_file(Path(local_path))
    require_file(local_path, "WikiText file (corpus.local_path)")
    lines = (line for _, line in read_text_lines(local_path))
    return _write_paragraphs(lines, out_path, str(local_path), inputs=[local_path])


def _wikitext_file(path: Path) -> Path:
    if not path.is_dir():
        return path
    for name in WIKITEXT_TRAIN_FILES:
        if (path / name).is_file():
            return path / name
    raise SpanftError(f"{path}: a directory without {' or '.join(WIKITEXT_TRAIN_FILES)} (corpus.local_path)")


def write_hf_corpus(
    hf_id: str, hf_config: str | None, hf_split: str, out_path: str | Path, revision: str | None = None
) -> int:
    """WikiText from the Hugging Face hub (``datasets.load_dataset``, ``text`` column) -> corpus file.

    ``revision``: a branch, tag or commit of the dataset repository (None or '': its main branch).
    """
    settle_offline_mode()
    # Imported here, after settle_offline_mode: datasets reads the offline variables when first imported, and it
    # takes seconds to import, which only the hub source should pay.
    import datasets

    revision = revision or None
    source = f"{hf_id} ({hf_config}, split {hf_split}{', revision ' + revision if revision else ''})"
    try:
        data = datasets.load_dataset(hf_id, hf_config, split=hf_split, revision=revision)
    except Exception as exc:  # network, hub and cache errors all end the same way for the user
        first_line = (str(exc).strip().splitlines() or [""])[0][:60]  # the line stays readable (errors.MAX_LINE)
        raise SpanftError(
            f"could not load {source} from the hub ({type(exc).__name__}: {first_line}); without network, set "
            "corpus.source: local and corpus.local_path: a wiki.train.tokens or .raw (--local-path)"
        ) from None
    if "text" not in data.column_names:
        raise SpanftError(f"{source}: no 'text' column (columns: {', '.join(data.column_names)})")
    return _write_paragraphs(_iter_column(data, "text"), out_path, source)


def _iter_column(data, column: str, batch_size: int = 10_000) -> Iterator[str]:
    for start in range(0, len(data), batch_size):
        yield from data[start : start + batch_size][column]


def write_corpus(out: str | Path, tagged_out: str | Path | None = None, *, source: str = "synthetic",
                 tokens: int = 2_000_000, seed: int = 0, local_path: str | None = None,
                 hf_id: str = "Salesforce/wikitext", hf_config: str | None = "wikitext-103-raw-v1",
                 hf_split: str = "train", hf_revision: str | None = None, tagged_sentences: int = 5000,
                 record_out: str | Path | None = None) -> None:
    """The corpus stage: write the corpus from ``source`` (params ``corpus``), and the tagged sentences.

    ``record_out``: where to write what the corpus was made from (:mod:`spanft.data.provenance`): the hub
    repository and the commit its revision resolved to, or the local path, with the corpus file's digest.

    ``tagged_out``: POS-tagged sentences of the synthetic language, written only with the synthetic corpus
    (they describe that language and nothing else); with a real corpus the chunker's tagger learns from
    CoNLL-2003's POS column instead (the tagger stage, :mod:`spanft.data.tagger_data`).
    """
    if tagged_out and Path(tagged_out).resolve() == Path(out).resolve():
        raise SpanftError(f"corpus: the tagged-sentences file {tagged_out} is the corpus file: give two different files")
    if tagged_out and tagged_sentences <= 0:
        raise SpanftError(f"corpus.tagged_sentences must be > 0, got {tagged_sentences}")
    if tagged_out and source != "synthetic":
        log.info("corpus: no tagged sentences for a %s corpus (%s not written): synthetic tags exist only with "
                 "the synthetic corpus", source, tagged_out)
    if source == "synthetic":
        write_synthetic_corpus(out, tokens, seed)
    elif source == "local":
        if not local_path:
            raise SpanftError("corpus.source is local but corpus.local_path is not set (--local-path FILE)")
        write_local_corpus(local_path, out)
    elif source == "hf":
        write_hf_corpus(hf_id, hf_config, hf_split, out, hf_revision)
    else:
        raise SpanftError(f"corpus.source: unknown source {source!r}; valid sources: synthetic, hf, local")
    if tagged_out and source == "synthetic":
        write_tagged_sentences(tagged_out, tagged_sentences, seed)
    if record_out:
        _write_record(record_out, out, source, local_path=local_path, hf_id=hf_id, hf_config=hf_config,
                      hf_split=hf_split, hf_revision=hf_revision, tokens=tokens, seed=seed)


def _write_record(record_out: str | Path, corpus: str | Path, source: str, **settings) -> None:
    """The corpus's provenance record: hub id and resolved commit, or path, and the written file's digest."""
    digest = paths_digest([corpus])
    if source == "hf":
        record = hub_record(settings["hf_id"], settings["hf_revision"] or None, "dataset",
                            config=settings["hf_config"], split=settings["hf_split"], digest=digest)
    elif source == "local":
        record = local_record("local", Path(settings["local_path"]).resolve(), digest)
    else:
        record = local_record("synthetic", "synthetic language", digest, tokens=settings["tokens"],
                              seed=settings["seed"])
    with atomic_open(record_out, inputs=[corpus]) as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
        handle.write("\n")
