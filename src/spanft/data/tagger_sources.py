"""Which tagger fits which task data (params ``chunker.source`` against ``data.source``).

Kept apart from :mod:`spanft.data.tagger_data` so that the params check, which every stage runs, does not
import the tagger's training code.
"""

from __future__ import annotations

from spanft.errors import SpanftError

TAGGER_SOURCES = ("synthetic", "conll", "nltk")
REAL_DATA_SOURCES = ("hf", "local")


def check_tagger_source(tagger_source: str, data_source: str) -> None:
    """The tagger must describe the task data's language: synthetic tags for synthetic data only."""
    if tagger_source not in TAGGER_SOURCES:
        raise SpanftError(f"chunker.source: {tagger_source!r} is not one of {', '.join(TAGGER_SOURCES)}")
    if tagger_source == "synthetic" and data_source in REAL_DATA_SOURCES:
        raise SpanftError("chunker.source synthetic tags the synthetic language only; with real task data "
                          f"(data.source {data_source}) use conll (trained on CoNLL-2003 POS, offline) or nltk")
    if tagger_source == "conll" and data_source not in REAL_DATA_SOURCES:
        raise SpanftError(f"chunker.source conll needs real CoNLL-2003 files (data.source hf or local, found "
                          f"{data_source!r}); synthetic task data goes with chunker.source synthetic")
