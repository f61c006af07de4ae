"""Synthetic stand-ins for every registry task, in each task's exact schema, built from the synthetic language:
every split drawn from its own generator seeded by (seed, task, split), so sizes of one split never change another's
examples; unlabeled test splits get the same generator with the label withheld.
"""

from __future__ import annotations

import zlib
from typing import Iterator

import numpy as np
from tqdm import tqdm

from spanft.data.columns import SplitColumns, SyntheticSizes, unlabeled_value
from spanft.data.registry import TaskSpec
from spanft.data.synthetic.cues import cue_vocabulary
from spanft.data.synthetic.examples import example_generator, nli_generator
from spanft.data.synthetic.language import SyntheticLanguage, language_for_seed


def _split_rng(seed: int, task: str, split: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(task.encode()), zlib.crc32(split.encode())])


def generate_split(
    task: TaskSpec, split: str, size: int, seed: int = 0, language: SyntheticLanguage | None = None
) -> SplitColumns:
    """``size`` examples of one split as :class:`spanft.data.columns.SplitColumns` (unlabeled for test splits)."""
    lex = cue_vocabulary(language if language is not None else language_for_seed(0))
    rng = _split_rng(seed, task.name, split)
    labeled = task.splits[split].labeled
    generate = example_generator(task, split)
    out = SplitColumns(task, split)
    for row in tqdm(range(size), desc=f"{task.name} {split}", leave=False, disable=True if size < 5000 else None):
        label = None if task.is_regression or task.is_tagging else row % task.num_labels
        if split == "ax":  # the diagnostic set mixes both genres
            generate = nli_generator(task.label_names, mismatched=bool(rng.random() < 0.5))
        sentences, value = generate(lex, rng, label)
        out.add(row, sentences, value if labeled else unlabeled_value(task), f"synthetic {task.name} {split} row {row}")
    _shuffle_rows(out, rng)
    return out


def _shuffle_rows(out: SplitColumns, rng: np.random.Generator) -> None:
    """Classes were drawn round-robin for balance; shuffle so the order carries no signal (idx follows the rows)."""
    order = rng.permutation(len(out))
    out.words_a = [out.words_a[i] for i in order]
    if out.words_b:
        out.words_b = [out.words_b[i] for i in order]
    out.labels = [out.labels[i] for i in order]


def iter_synthetic(task: TaskSpec, sizes: SyntheticSizes) -> Iterator[tuple[str, SplitColumns]]:
    """``(split, examples)`` for every split of ``task`` at the sizes of a :class:`spanft.data.columns.SyntheticSizes`."""
    language = language_for_seed(sizes.language_seed)
    for split in task.all_splits:
        size = sizes.train if split == task.train_split else sizes.eval if split in task.eval_splits else sizes.test
        yield split, generate_split(task, split, size, sizes.seed, language)
