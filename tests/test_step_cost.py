"""Table 3's side-by-side step costs: the alternation, its immunity to a machine whose speed drifts, the step
against a hand-written AdamW step, and the training batches it draws."""

from __future__ import annotations

import copy
import statistics

import numpy as np
import pandas as pd
import pytest
import torch
from test_features import wordpiece  # noqa: F401  (a module fixture: a small WordPiece tokenizer)
from test_model import random_batch, tiny_bert

from spanft.data.registry import get_task
from spanft.model.span_model import SpanConfig, SpanModel
from spanft.train import step_cost
from spanft.train.options import FinetuneOptions, span_config_for
from spanft.train.step_cost import (
    StepCostConfig,
    _Arm,
    _summary,
    alternate,
    paired_step_cost,
    sample_batches,
    step_cost_arms,
    training_step,
)


class DriftingMachine:
    """A clock whose machine slows by ``drift`` after every step: a step of cost c takes c x the speed factor."""

    def __init__(self, drift: float) -> None:
        self.now, self.factor, self.drift = 0.0, 1.0, drift

    def clock(self) -> float:
        return self.now

    def stepper(self, cost: float, log: list, name: str):
        def step(inputs: dict) -> None:
            log.append((name, sorted(inputs)))
            self.now += cost * self.factor
            self.factor *= self.drift

        return step


def _arms(machine: DriftingMachine, log: list, costs=(1.0, 1.3)) -> list[_Arm]:
    return [_Arm("baseline", machine.stepper(costs[0], log, "baseline"), False, [], [], []),
            _Arm("sf", machine.stepper(costs[1], log, "sf"), True, [], [], [])]


BATCHES = [{"input_ids": torch.zeros(2, 3 + i), "span_starts": torch.zeros(2, 1)} for i in range(3)]


def _on(monkeypatch, machine: DriftingMachine) -> None:
    monkeypatch.setattr(step_cost.time, "perf_counter", machine.clock)
    monkeypatch.setattr(step_cost.time, "process_time", machine.clock)
    monkeypatch.setattr(step_cost, "run_queue_wait", lambda: None)


def test_rounds_alternate_which_arm_goes_first_and_leave_the_warmup_out(monkeypatch):
    machine, log = DriftingMachine(1.0), []
    _on(monkeypatch, machine)
    arms = _arms(machine, log)
    batches = BATCHES + [{"input_ids": torch.zeros(2, 6), "span_starts": torch.zeros(2, 1)}]  # even
    alternate(arms, batches, rounds=8)
    rounds = len(batches) + 8
    assert len(log) == 2 * rounds
    assert all(keys == ["input_ids"] for name, keys in log if name == "baseline")  # no spans for the baseline
    assert all(keys == ["input_ids", "span_starts"] for name, keys in log if name == "sf")
    firsts = [log[2 * r][0] for r in range(rounds)]
    assert firsts[:3] == ["baseline", "sf", "baseline"]  # batch to batch, the other arm first
    for batch in range(len(batches)):  # and every batch is timed with either arm first
        timed = {firsts[r] for r in range(len(batches), rounds) if r % len(batches) == batch}
        assert timed == {"baseline", "sf"}, batch
    assert [len(arm.walls) for arm in arms] == [8, 8]
    assert arms[0].walls == pytest.approx([1.0] * 8) and arms[1].walls == pytest.approx([1.3] * 8)


def test_the_ratio_is_the_median_of_each_rounds_ratio(monkeypatch):
    """Batch by batch the two arms' costs differ (SF / baseline 3, 1.25 and 1.1): the median round's ratio is
    1.25, while the ratio of the two arms' median times would be 3 / 2."""
    machine, log = DriftingMachine(1.0), []
    _on(monkeypatch, machine)
    costs = {3: (1.0, 3.0), 4: (2.0, 2.5), 5: (3.0, 3.3)}  # by batch width: baseline, sf

    def stepper(which: int):
        def step(inputs: dict) -> None:
            machine.now += costs[inputs["input_ids"].shape[1]][which]
        return step

    arms = [_Arm("baseline", stepper(0), False, [], [], []), _Arm("sf", stepper(1), True, [], [], [])]
    alternate(arms, BATCHES, rounds=9)
    result = _summary(arms, BATCHES)
    assert result["ratio"] == pytest.approx(1.25)
    assert result["sf_step_seconds"] / result["baseline_step_seconds"] == pytest.approx(1.5)


def test_a_timing_whose_steps_waited_for_a_core_is_contended(monkeypatch):
    machine, log = DriftingMachine(1.0), []
    _on(monkeypatch, machine)
    waited = iter(range(10**6))
    monkeypatch.setattr(step_cost, "run_queue_wait", lambda: 0.2 * next(waited))  # 0.2 s a step: over a quarter
    arms = _arms(machine, log, costs=(0.5, 0.6))
    alternate(arms, BATCHES, rounds=4)
    assert _summary(arms, BATCHES)["contended"] is True
    monkeypatch.setattr(step_cost, "run_queue_wait", lambda: 0.05 * next(waited))
    arms = _arms(machine, log, costs=(0.5, 0.6))
    alternate(arms, BATCHES, rounds=4)
    assert _summary(arms, BATCHES)["contended"] is False


def test_the_arms_are_the_baseline_and_sf_of_the_runs_each_on_its_own_copy_of_the_backbone(monkeypatch):
    task = get_task("sst2")
    baseline, sf = (FinetuneOptions(task="sst2", backbone="b", variant=v, data="d", out="o") for v in ("baseline", "sf"))
    arms = step_cost_arms(baseline, sf, task)
    assert list(arms) == ["baseline", "sf"]
    assert arms["baseline"][0].head == "cls-only" and arms["baseline"][1] is False
    assert arms["sf"][0] == span_config_for(sf, task) and arms["sf"][1] is True
    models = []
    monkeypatch.setattr(step_cost, "training_step", lambda model, device: models.append(model) or (lambda inputs: None))
    backbone = tiny_bert()
    paired_step_cost(backbone, BATCHES, arms, StepCostConfig(rounds=2))
    assert [m.span_config for m in models] == [arms["baseline"][0], arms["sf"][0]]
    assert models[0].backbone is not models[1].backbone and backbone not in (models[0].backbone, models[1].backbone)


def test_the_per_round_ratio_holds_while_the_machine_slows(monkeypatch):
    """Each step 4% slower than the one before: over 18 rounds the machine ends 5x slower than it began."""
    machine, log = DriftingMachine(1.04), []
    _on(monkeypatch, machine)
    arms = _arms(machine, log)
    alternate(arms, BATCHES, rounds=18)
    result = _summary(arms, BATCHES)
    assert result["ratio"] == pytest.approx(1.3, rel=0.01)
    assert max(arms[0].walls) / min(arms[0].walls) > 3  # the drift is there: the baseline's own times spread 3x
    # the same steps timed one arm after the other, as two runs are: the later arm looks far dearer
    machine, log = DriftingMachine(1.04), []
    _on(monkeypatch, machine)
    separate = _arms(machine, log)
    alternate(separate[:1], BATCHES, rounds=20)
    alternate(separate[1:], BATCHES, rounds=20)
    assert statistics.median(separate[1].walls) / statistics.median(separate[0].walls) > 2.5


def test_a_step_is_adamw_with_weight_decay_on_matrices_and_clipping_at_one():
    torch.manual_seed(0)
    model = SpanModel(tiny_bert(), SpanConfig(encoder="cnn-cnn", head="concat", segmentation="spans", num_labels=3,
                                              dropout=0.0))
    for p in model.parameters():  # weights large enough that a weight decay off by 0.005 shows
        torch.nn.init.normal_(p, std=0.3)
    reference = copy.deepcopy(model)
    batches = []
    for seed in range(3):
        input_ids, attention_mask, starts, lengths = random_batch(seed)
        batches.append({"input_ids": input_ids, "attention_mask": attention_mask, "span_starts": starts,
                        "span_lengths": lengths, "labels": torch.tensor([0, 1, 2, 1])})
    step = training_step(model, "cpu", lr=0.05)  # large enough that the weight decay shows
    decay = [p for p in reference.parameters() if p.ndim >= 2]
    no_decay = [p for p in reference.parameters() if p.ndim < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=0.05, foreach=False, fused=False)
    for batch in batches:
        step(batch)
        loss = reference(**batch).loss
        loss.backward()
        norm = torch.sqrt(sum((p.grad ** 2).sum() for p in reference.parameters() if p.grad is not None))
        assert norm > 1.0  # the clipping below is exercised
        for p in reference.parameters():
            if p.grad is not None:
                p.grad *= min(1.0, 1.0 / (float(norm) + 1e-6))
        optimizer.step()
        optimizer.zero_grad()
    for (name, mine), theirs in zip(model.named_parameters(), reference.parameters()):
        if name.endswith("key.bias"):  # each query adds the same q.b to every key score, which softmax ignores:
            continue                   # its gradient is rounding noise, which Adam scales to a full-size step
        # 2e-5: Adam turns the float noise of a near-zero gradient into ~1e-5 (seen: 1.2e-5); a weight decay off by
        # 0.005 moves a 0.3 weight by 7.5e-5 a step, still caught
        assert torch.allclose(mine, theirs, atol=2e-5), (name, float((mine - theirs).abs().max()))
    assert any(not torch.equal(p, q) for p, q in zip(model.parameters(), SpanModel(
        tiny_bert(), SpanConfig(encoder="cnn-cnn", head="concat", segmentation="spans", num_labels=3)).parameters()))


def _segmented(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    words = ["the", "cat", "sat", "on", "a", "mat", "running", "quickly", "unbelievable", "and"]
    rows = []
    for i in range(n):
        sentence = [str(w) for w in rng.choice(words, size=int(rng.integers(2, 14)))]
        spans, left = [], len(sentence)
        while left:
            spans.append(int(min(left, rng.integers(1, 4))))
            left -= spans[-1]
        rows.append({"idx": i, "words_a": sentence, "spans_a": spans, "label": int(rng.integers(0, 2))})
    return pd.DataFrame(rows)


def _options(batch_size: int, **limits) -> FinetuneOptions:
    return FinetuneOptions(task="sst2", backbone="b", variant="sf", data="d", out="o", batch_size=batch_size,
                           max_seq_len=32, max_span_len=4, **limits)


def test_batches_are_full_length_grouped_and_drawn_by_the_seed(wordpiece):  # noqa: F811
    frame, task = _segmented(50), get_task("sst2")
    config = StepCostConfig(batches=4, rounds=1, seed=0)
    batches = sample_batches(frame, wordpiece, task, _options(8), config)
    assert len(batches) == 4 and all(b["input_ids"].shape[0] == 8 for b in batches)
    for batch in batches:  # one length group each: sorted longest first, padded to its own longest
        lengths = batch["attention_mask"].sum(1).tolist()
        assert lengths == sorted(lengths, reverse=True) and batch["input_ids"].shape[1] == lengths[0]
        assert "span_ids" in batch and "labels" in batch
    again = sample_batches(frame, wordpiece, task, _options(8), config)
    assert all(torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(batches, again))
    other = sample_batches(frame, wordpiece, task, _options(8), StepCostConfig(batches=4, rounds=1, seed=1))
    assert any(not torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(batches, other))
    # fewer examples than the batches want: the full batches there are; fewer than one batch: one batch of all
    assert len(sample_batches(frame, wordpiece, task, _options(16), config)) == 3
    small = sample_batches(_segmented(5), wordpiece, task, _options(8), config)
    assert len(small) == 1 and small[0]["input_ids"].shape[0] == 5


def test_batches_come_from_the_examples_the_run_keeps(wordpiece):  # noqa: F811
    frame, task = _segmented(50), get_task("sst2")
    frame.loc[10:, "words_a"] = frame.loc[10:, "words_a"].map(lambda words: ["Ω"] * len(words))  # [UNK]
    marker = wordpiece.unk_token_id
    config = StepCostConfig(batches=4, rounds=1, seed=0)
    assert any((b["input_ids"] == marker).any() for b in sample_batches(frame, wordpiece, task, _options(8), config))
    kept = sample_batches(frame, wordpiece, task, _options(8, max_train_examples=10), config)
    assert len(kept) == 1 and not any((b["input_ids"] == marker).any() for b in kept)
