"""Length-grouped training batches: the order itself, and the batches the Trainer really builds from it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import BertConfig, BertModel, TrainingArguments

from spanft.model.features import (
    MEGA_BATCHES,
    LengthGroupedSampler,
    SpanCollator,
    example_lengths,
    length_grouped_order,
)
from spanft.model.span_model import SpanConfig, SpanModel
from spanft.train.trainer import SpanTrainer


@settings(max_examples=80, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 40), min_size=1, max_size=3 * MEGA_BATCHES),
    batch_size=st.integers(1, 6),
    seed=st.integers(0, 3),
    epoch=st.integers(0, 3),
)
def test_order_is_a_permutation_of_sorted_batches(lengths, batch_size, seed, epoch):
    """One mega-batch (n <= MEGA_BATCHES x batch): the full batches cover disjoint length ranges, and the
    partial batch, last, holds the shortest examples."""
    lengths = np.array(lengths)
    order = length_grouped_order(lengths, batch_size, seed, epoch)
    assert sorted(order.tolist()) == list(range(len(lengths)))
    assert order.tolist() == length_grouped_order(lengths, batch_size, seed, epoch).tolist()
    if len(lengths) > batch_size * MEGA_BATCHES:
        return
    full = len(lengths) // batch_size
    ranges = [(lengths[b].min(), lengths[b].max()) for b in order[: full * batch_size].reshape(full, batch_size)]
    for i, (low_i, high_i) in enumerate(ranges):
        for low_j, high_j in ranges[i + 1 :]:
            assert high_i <= low_j or high_j <= low_i
    rest = order[full * batch_size :]
    if len(rest) and full:
        assert lengths[rest].max() <= min(low for low, _ in ranges)


def test_grouping_pads_far_less_than_a_random_order():
    rng = np.random.default_rng(0)
    lengths = rng.integers(8, 129, size=64 * 32)
    real = lengths.sum()

    def padded(order):
        return sum(lengths[b].max() * len(b) for b in np.array_split(order, len(order) // 32))

    grouped = padded(length_grouped_order(lengths, 32, seed=1, epoch=0))
    shuffled = padded(rng.permutation(len(lengths)))
    assert grouped / real <= 1.15 < shuffled / real


def test_epochs_and_seeds_change_the_order_but_not_its_content():
    lengths = np.arange(1, 201) % 17 + 1
    orders = {(seed, epoch): tuple(length_grouped_order(lengths, 8, seed, epoch)) for seed in (1, 2) for epoch in (0, 1)}
    assert len(set(orders.values())) == 4
    sampler = LengthGroupedSampler(lengths, 8, seed=2)
    sampler.set_epoch(1)
    assert tuple(sampler) == orders[(2, 1)]


def _tiny_trainer(tmp_path, lengths: list[int], batch_size: int, seed: int):
    torch.manual_seed(0)
    backbone = BertModel(BertConfig(vocab_size=500, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                    intermediate_size=16, max_position_embeddings=64))
    import datasets

    # the first token names the example, so each batch says which examples it holds
    rows = [[i + 1] + [3] * (n - 1) for i, n in enumerate(lengths)]
    dataset = datasets.Dataset.from_dict({
        "input_ids": rows, "attention_mask": [[1] * n for n in lengths], "labels": [i % 2 for i in range(len(lengths))],
    })
    args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=batch_size, seed=seed,
                             data_seed=seed, use_cpu=True, report_to="none", dataloader_num_workers=0)
    trainer = SpanTrainer(model=SpanModel(backbone, SpanConfig(head="cls-only")), args=args,
                                   train_dataset=dataset, data_collator=SpanCollator(SimpleNamespace(pad_token_id=0)))
    return trainer, dataset


def test_trainer_batches_follow_the_length_grouped_order(tmp_path):
    rng = np.random.default_rng(3)
    lengths = rng.integers(2, 60, size=90).tolist()
    trainer, dataset = _tiny_trainer(tmp_path, lengths, batch_size=8, seed=5)
    np.testing.assert_array_equal(example_lengths(dataset), lengths)
    loader = trainer.get_train_dataloader()
    for epoch in (0, 1):
        loader.set_epoch(epoch)
        batches = list(loader)
        want = length_grouped_order(np.array(lengths), 8, seed=5, epoch=epoch)
        got = np.concatenate([batch["input_ids"][:, 0].numpy() - 1 for batch in batches])
        np.testing.assert_array_equal(got, want)
        for batch in batches:  # dynamic padding: each batch as wide as its longest example
            examples = batch["input_ids"][:, 0].numpy() - 1
            assert batch["input_ids"].shape[1] == max(lengths[i] for i in examples)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), limit=st.sampled_from([None, 1, 2, 3]))
def test_collator_span_ids_against_a_loop(data, limit):
    """Each example: contiguous spans from position 0 with gaps, cut at ``limit`` pieces; -1 elsewhere."""
    features = []
    for _ in range(data.draw(st.integers(1, 4))):
        length = data.draw(st.integers(1, 12))
        starts, lengths, position = [], [], 0
        while position < length:
            width = data.draw(st.integers(1, length - position))
            if data.draw(st.booleans()):
                starts.append(position)
                lengths.append(width)
            position += width
        features.append({"input_ids": [7] * length, "attention_mask": [1] * length,
                         "span_starts": starts, "span_lengths": lengths, "labels": 0})
    batch = SpanCollator(SimpleNamespace(pad_token_id=0), max_span_len=limit)(features)
    width = batch["input_ids"].shape[1]
    for row, feature in enumerate(features):
        want = [-1] * width
        for span, (start, length) in enumerate(zip(feature["span_starts"], feature["span_lengths"])):
            for position in range(start, start + min(length, limit or length)):
                want[position] = span
        assert batch["span_ids"][row].tolist() == want


def test_model_given_the_collator_span_ids_equals_the_model_deriving_them():
    torch.manual_seed(0)
    backbone = BertModel(BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                    intermediate_size=16, max_position_embeddings=64))
    rng = np.random.default_rng(0)
    features = []
    for length in (9, 14, 5):
        pieces = rng.integers(1, 6, size=length).tolist()
        starts = np.cumsum([0, *pieces])[:-1]
        keep = starts < length
        features.append({"input_ids": rng.integers(5, 50, length).tolist(), "attention_mask": [1] * length,
                         "span_starts": starts[keep].tolist(),
                         "span_lengths": np.minimum(np.array(pieces)[keep], length - starts[keep]).tolist(),
                         "labels": 1})
    for encoder in ("cnn-cnn", "attention-max"):
        for task_type in ("single", "tagging"):
            model = SpanModel(backbone, SpanConfig(encoder=encoder, task_type=task_type, max_span_len=3,
                                                   num_labels=2, dropout=0.0)).eval()
            batch = SpanCollator(SimpleNamespace(pad_token_id=0), max_span_len=3)(features)
            batch.pop("labels")
            with torch.no_grad():
                given_ids = model(**batch).logits
                derived = model(**{k: v for k, v in batch.items() if k != "span_ids"}).logits
            torch.testing.assert_close(given_ids, derived)
